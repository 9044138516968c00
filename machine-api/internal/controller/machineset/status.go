package machineset

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/autoscaler"
	"machineapi.dev/machine-api/internal/availability"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// computeStatus returns the set's new status from what the reconcile in s observed and did, and
// c, the count of its active Machines. It makes no API calls.
func computeStatus(s *scope, c counts) v1beta1.MachineSetStatus {
	set := s.set
	st := *set.Status.DeepCopy()
	active := s.active()

	st.Replicas = int32(len(active) + s.created)
	st.FullyLabeledReplicas = c.fullyLabeled
	st.ReadyReplicas = c.ready
	st.AvailableReplicas = c.available
	st.UpToDateReplicas = c.upToDate
	if s.selector != nil {
		st.Selector = s.selector.String()
	}
	if s.acted {
		st.ObservedGeneration = set.Generation
	}

	conditions.Set(&st.Conditions, scalingUp(s, st.Replicas), s.now)
	conditions.Set(&st.Conditions, scalingDown(s, st.Replicas), s.now)
	conditions.Set(&st.Conditions, frozenCondition(s, st.Replicas), s.now)
	conditions.Set(&st.Conditions, readyCondition(s, active, c), s.now)
	if launched, ok := machinesProvisioned(s); ok {
		conditions.Set(&st.Conditions, launched, s.now)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.MachinesProvisionedCondition)
	}
	if bounds, ok := autoscaler.Bounds(set.Annotations, replicasOf(set), set.Generation); ok {
		conditions.Set(&st.Conditions, bounds, s.now)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.AutoscalerBoundsCondition)
	}
	return st
}

// counts are the per-Machine tallies of a set's status.
type counts struct {
	fullyLabeled, ready, available, upToDate int32
	// nextAvailable is how long until the next ready Machine becomes available (0: none waits).
	nextAvailable time.Duration
	failed        []string // "name (reason: message)" of Failed Machines
}

// count tallies machines: fully labeled (every template label present), ready (Ready condition
// True), available (ready for at least minReadySeconds, measured from the Ready condition's last
// transition: see package availability) and up to date (UpToDate condition True, which the
// machine controller writes).
func count(machines []*v1beta1.Machine, set *v1beta1.MachineSet, now time.Time) counts {
	var c counts
	minReady := time.Duration(set.Spec.MinReadySeconds) * time.Second
	want := set.Spec.Template.Metadata.Labels
	for _, m := range machines {
		if hasLabels(m.Labels, want) {
			c.fullyLabeled++
		}
		if m.Status.Phase == v1beta1.MachinePhaseFailed {
			msg := ""
			if m.Status.FailureMessage != nil {
				msg = *m.Status.FailureMessage
			}
			c.failed = append(c.failed, fmt.Sprintf("%s (%s)", m.Name, msg))
		}
		if meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.UpToDateCondition) {
			c.upToDate++
		}
		ready, available, wait := availability.Of(m, minReady, now)
		switch {
		case available:
			c.ready++
			c.available++
		case ready:
			c.ready++
			if c.nextAvailable == 0 || wait < c.nextAvailable {
				c.nextAvailable = wait
			}
		}
	}
	slices.Sort(c.failed)
	return c
}

// hasLabels reports whether have holds every label of want, with its value.
func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func scalingUp(s *scope, have int32) metav1.Condition {
	want := replicasOf(s.set)
	c := metav1.Condition{Type: v1beta1.ScalingUpCondition, Status: metav1.ConditionFalse, ObservedGeneration: s.set.Generation}
	switch {
	case !s.set.DeletionTimestamp.IsZero():
		c.Reason, c.Message = ReasonDeleting, "the MachineSet is being deleted"
	case s.frozen:
		c.Reason, c.Message = ReasonFrozen, "creating is stopped while the set has more Machines than replicas plus surge (see the Frozen condition)"
	case have < want && s.owner != nil && s.owner.holdCreates != "":
		c.Reason, c.Message = ReasonCreatesHeld, s.owner.holdCreates
	case s.createErr != nil:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonCreateFailed
		c.Message = fmt.Sprintf("%d of %d Machines exist; creating Machines failed, retrying with backoff: %v", have, want, s.createErr)
	case have < want:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonScalingUp
		c.Message = fmt.Sprintf("%d of %d Machines exist; creating %d", have, want, want-have)
	case s.created > 0:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonScalingUp
		c.Message = fmt.Sprintf("waiting to observe %d created Machines", s.created)
	default:
		c.Reason, c.Message = ReasonNotScalingUp, fmt.Sprintf("%d of %d Machines exist", have, want)
	}
	return c
}

func scalingDown(s *scope, have int32) metav1.Condition {
	want := replicasOf(s.set)
	deleting := s.deleting()
	c := metav1.Condition{Type: v1beta1.ScalingDownCondition, Status: metav1.ConditionTrue, ObservedGeneration: s.set.Generation}
	switch {
	case s.deleteErr != nil:
		c.Reason = ReasonDeleteFailed
		c.Message = fmt.Sprintf("%d Machines exist, %d wanted; deleting Machines failed, retrying with backoff: %v", have, want, s.deleteErr)
	case len(s.held) > 0:
		c.Reason = ReasonWaitingForDisruptionBudget
		c.Message = fmt.Sprintf("%d Machines exist, %d wanted; %s", have, want, heldSummary(s))
	case have > want && s.set.DeletionTimestamp.IsZero():
		c.Reason = ReasonScalingDown
		c.Message = fmt.Sprintf("%d Machines exist, %d wanted; deleting %d", have, want, have-want)
	case len(deleting) > 0:
		c.Reason = ReasonWaitingForDeletions
		c.Message = fmt.Sprintf("%d Machines are being deleted: %s", len(deleting), preview(deleting))
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNotScalingDown, fmt.Sprintf("%d of %d Machines exist", have, want)
	}
	return c
}

func frozenCondition(s *scope, have int32) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.FrozenCondition, Status: metav1.ConditionFalse, Reason: ReasonWithinBounds, ObservedGeneration: s.set.Generation}
	bound := replicasOf(s.set) + s.surge()
	if s.frozen {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonTooManyMachines
		c.Message = fmt.Sprintf("%d Machines exist, more than replicas (%d) plus surge (%d): creating is stopped and the excess is deleted; "+
			"another controller or a manual change made Machines for this set's selector", have, replicasOf(s.set), s.surge())
		return c
	}
	c.Message = fmt.Sprintf("%d Machines, at most %d allowed (replicas plus surge)", have, bound)
	return c
}

// isFrozen decides the Frozen state: it turns True when the set has more Machines than replicas
// plus surge and that number grew past the bound (more than the last status reported), rather
// than the bound being lowered below it (a scale-down); it stays True until the set is back within
// bounds.
func isFrozen(set *v1beta1.MachineSet, have, surge int32) bool {
	bound := replicasOf(set) + surge
	if have <= bound {
		return false
	}
	if meta.IsStatusConditionTrue(set.Status.Conditions, v1beta1.FrozenCondition) {
		return true
	}
	return have > set.Status.Replicas
}

func readyCondition(s *scope, active []*v1beta1.Machine, c counts) metav1.Condition {
	want := replicasOf(s.set)
	cond := metav1.Condition{Type: v1beta1.ReadyCondition, ObservedGeneration: s.set.Generation}
	if c.ready >= want && int32(len(active)) == want {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonMachinesReady
		cond.Message = fmt.Sprintf("%d of %d Machines are ready", c.ready, want)
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, ReasonMachinesNotReady
	cond.Message = fmt.Sprintf("%d of %d Machines are ready", c.ready, want)
	if len(c.failed) > 0 {
		cond.Message += fmt.Sprintf("; %d failed: %s", len(c.failed), preview(c.failed))
	}
	return cond
}

// statusApply returns the server-side apply configuration of st, the whole status of set (the
// set controller owns all of it). The UID makes the write fail rather than land on a set
// re-created under the same name.
func statusApply(set *v1beta1.MachineSet, st v1beta1.MachineSetStatus) *acv1beta1.MachineSetApplyConfiguration {
	ac := acv1beta1.MachineSetStatus().
		WithReplicas(st.Replicas).
		WithFullyLabeledReplicas(st.FullyLabeledReplicas).
		WithReadyReplicas(st.ReadyReplicas).
		WithAvailableReplicas(st.AvailableReplicas).
		WithUpToDateReplicas(st.UpToDateReplicas).
		WithObservedGeneration(st.ObservedGeneration).
		WithConditions(conditions.ApplyConfigurations(st.Conditions)...)
	if st.Selector != "" {
		ac.WithSelector(st.Selector)
	}
	return acv1beta1.MachineSet(set.Name, set.Namespace).WithUID(set.UID).WithStatus(ac)
}

func preview(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
