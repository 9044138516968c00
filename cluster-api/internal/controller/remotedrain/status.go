package remotedrain

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	machineac "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/reconcile/conditions"
	"machineapi.dev/machine-api/reconcile/write"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// scope is what one reconcile of a deleting Machine learned.
type scope struct {
	machine *machinev1.Machine // as read (its hooks as patched)
	now     time.Time
	cluster *v1beta1.Cluster // nil when the Cluster is gone
	policy  policy           // what the drain policy decided
	outcome *outcome         // nil when there is nothing to report (e.g. a conflict to retry)
}

// outcome is where the drain stands after this reconcile.
type outcome struct {
	released  bool   // the hook was removed
	waiting   bool   // other preDrain hooks hold the drain: it has not begun
	eventType string // Normal or Warning
	reason    string // a WorkloadNodeDrained reason
	message   string
}

// conditionFor returns the WorkloadNodeDrained condition for o as set at now among conds, the
// Machine's conditions (conditions.Set: the transition time of the one there is kept while its
// status stays), and whether it changed anything a user sees (there is nothing to write
// otherwise). It is Unknown while other hooks hold the drain, False from the first drain step on
// (so its transition time is when draining began, see drainStartTime), True once the hook is
// removed.
func conditionFor(o *outcome, conds []metav1.Condition, generation int64, now time.Time) (metav1.Condition, bool) {
	c := metav1.Condition{
		Type:               v1beta1.WorkloadNodeDrainedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             o.reason,
		Message:            o.message,
		ObservedGeneration: generation,
	}
	switch {
	case o.released:
		c.Status = metav1.ConditionTrue
	case o.waiting:
		c.Status = metav1.ConditionUnknown
	}
	conds = slices.Clone(conds)
	changed := conditions.Set(&conds, c, now)
	return *meta.FindStatusCondition(conds, c.Type), changed
}

// needsEvent reports whether o deserves an event: always when the hook was removed, and while
// waiting only when the message differs from the condition's (a drain's progress or a new
// blocker, not another poll of the same state).
func needsEvent(o *outcome, prev *metav1.Condition) bool {
	return o.released || prev == nil || prev.Message != o.message || prev.Reason != o.reason
}

// report emits the outcome's event and writes the WorkloadNodeDrained condition, once, with a
// server-side apply of that one condition under FieldOwner: the machine controller's and the node
// linker's conditions are never touched.
func (r *Reconciler) report(ctx context.Context, s *scope) error {
	o := s.outcome
	if o == nil {
		return nil
	}
	m := s.machine
	prev := meta.FindStatusCondition(m.Status.Conditions, v1beta1.WorkloadNodeDrainedCondition)
	if needsEvent(o, prev) {
		r.Recorder.Eventf(m, nil, o.eventType, o.reason, eventAction, "%s", o.message)
	}
	c, changed := conditionFor(o, m.Status.Conditions, m.Generation, s.now)
	if !changed {
		return nil
	}
	// A Machine gone (released, and its deletion went on) is no error.
	if _, err := write.Status(ctx, r.Client, conditionApply(m, c), FieldOwner, &machinev1.Machine{}); err != nil {
		return fmt.Errorf("writing the %s condition of machine %s: %w", v1beta1.WorkloadNodeDrainedCondition, client.ObjectKeyFromObject(m), err)
	}
	return nil
}

// conditionApply is the apply configuration of the one condition this controller owns, through
// machine-api's generated apply configurations. The UID makes the apply fail rather than act on a
// Machine re-created with the same name.
func conditionApply(m *machinev1.Machine, c metav1.Condition) *machineac.MachineApplyConfiguration {
	return machineac.Machine(m.Name, m.Namespace).WithUID(m.UID).
		WithStatus(machineac.MachineStatus().WithConditions(conditions.ApplyConfiguration(c)))
}
