package remotedrain

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// scope is what one reconcile of a deleting Machine learned.
type scope struct {
	machine *machinev1.Machine // as read (its hooks as patched)
	now     time.Time
	cluster *v1beta1.Cluster // nil when the Cluster is gone
	outcome *outcome         // nil when there is nothing to report (e.g. a conflict to retry)
}

// outcome is where the drain stands after this reconcile.
type outcome struct {
	released  bool   // the hook was removed
	eventType string // Normal or Warning
	reason    string // a WorkloadNodeDrained reason
	message   string
}

// conditionFor returns the WorkloadNodeDrained condition for o, keeping prev's transition time
// when the status did not change.
func conditionFor(o *outcome, prev *metav1.Condition, generation int64, now time.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               v1beta1.WorkloadNodeDrainedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             o.reason,
		Message:            o.message,
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	if o.released {
		c.Status = metav1.ConditionTrue
	}
	if prev != nil && prev.Status == c.Status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}

// needsEvent reports whether o deserves an event: always when the hook was removed, and while
// waiting only when the message differs from the condition's (a drain's progress or a new
// blocker, not another poll of the same state).
func needsEvent(o *outcome, prev *metav1.Condition) bool {
	return o.released || prev == nil || prev.Message != o.message || prev.Reason != o.reason
}

// sameCondition reports whether writing c would change nothing a user sees.
func sameCondition(c metav1.Condition, prev *metav1.Condition) bool {
	return prev != nil && prev.Status == c.Status && prev.Reason == c.Reason && prev.Message == c.Message &&
		prev.ObservedGeneration == c.ObservedGeneration
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
	c := conditionFor(o, prev, m.Generation, s.now)
	if sameCondition(c, prev) {
		return nil
	}
	apply, err := conditionApply(m, c)
	if err != nil {
		return err
	}
	err = r.Client.Status().Patch(ctx, apply, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership)
	if err != nil && !apierrors.IsNotFound(err) { // gone: released, and the Machine went on
		return fmt.Errorf("writing the %s condition of machine %s: %w", v1beta1.WorkloadNodeDrainedCondition, client.ObjectKeyFromObject(m), err)
	}
	return nil
}

// conditionApply is the apply configuration of the one condition this controller owns.
func conditionApply(m *machinev1.Machine, c metav1.Condition) (*unstructured.Unstructured, error) {
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{cond}}}}
	u.SetGroupVersionKind(machinev1.GroupVersion.WithKind("Machine"))
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	u.SetUID(m.UID) // the apply fails rather than act on a Machine re-created with the same name
	return u, nil
}
