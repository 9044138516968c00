package machinedeployment

import (
	"cmp"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/autoscaler"
	"machineapi.dev/machine-api/reconcile/conditions"
	"machineapi.dev/machine-api/reconcile/write"
)

// computeStatus returns the deployment's new status from its sets as the reconcile saw them. It
// makes no API calls.
func computeStatus(s *scope) v1beta1.MachineDeploymentStatus {
	md := s.md
	st := *md.Status.DeepCopy()
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.UpToDateReplicas = 0, 0, 0, 0, 0
	for _, set := range s.sets {
		st.Replicas += set.Status.Replicas
		st.ReadyReplicas += set.Status.ReadyReplicas
		st.AvailableReplicas += set.Status.AvailableReplicas
		st.UpToDateReplicas += set.Status.UpToDateReplicas
	}
	if s.newSet != nil {
		st.UpdatedReplicas = s.newSet.Status.Replicas
	}
	st.UnavailableReplicas = max(0, s.replicas()-st.AvailableReplicas)
	if sel, err := metav1.LabelSelectorAsSelector(md.Spec.Selector.AsLabelSelector()); err == nil {
		st.Selector = sel.String()
	}
	st.ObservedGeneration = md.Generation

	conditions.Set(&st.Conditions, available(s, st), s.now)
	progressing(s, &st)
	if bounds, ok := autoscaler.Bounds(md.Annotations, s.replicas(), md.Generation); ok {
		conditions.Set(&st.Conditions, bounds, s.now)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1beta1.AutoscalerBoundsCondition)
	}
	return st
}

// available is True when at least replicas - maxUnavailable Machines are available (all of them
// for Recreate and OnDelete).
func available(s *scope, st v1beta1.MachineDeploymentStatus) metav1.Condition {
	_, unavailable := s.fenceposts()
	need := max(0, s.replicas()-unavailable)
	c := metav1.Condition{Type: v1beta1.AvailableCondition, ObservedGeneration: s.md.Generation,
		Message: fmt.Sprintf("%d of %d Machines available, at least %d required", st.AvailableReplicas, s.replicas(), need)}
	if st.AvailableReplicas >= need {
		c.Status, c.Reason = metav1.ConditionTrue, ReasonMinimumAvailable
	} else {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonMinimumUnavailable
	}
	return c
}

// progressing sets the Progressing condition, as apps/v1 does: Unknown while paused; True with
// NewMachineSetAvailable once complete; True while the rollout makes progress; False with
// ProgressDeadlineExceeded once progressDeadlineSeconds pass without any. Progress is a created
// set, a scaled set, a spec change, or a change in the counts; for this condition
// lastTransitionTime is the time of the last progress (apps/v1's lastUpdateTime), which is what
// the deadline is measured from.
func progressing(s *scope, st *v1beta1.MachineDeploymentStatus) {
	md := s.md
	prev := meta.FindStatusCondition(md.Status.Conditions, v1beta1.ProgressingCondition)
	c := metav1.Condition{Type: v1beta1.ProgressingCondition, Status: metav1.ConditionTrue, ObservedGeneration: md.Generation}
	progressed := s.createdSet || s.scaled || md.Status.ObservedGeneration != md.Generation ||
		st.Replicas != md.Status.Replicas || st.UpdatedReplicas != md.Status.UpdatedReplicas ||
		st.UpToDateReplicas != md.Status.UpToDateReplicas ||
		st.ReadyReplicas != md.Status.ReadyReplicas || st.AvailableReplicas != md.Status.AvailableReplicas
	switch {
	case md.Spec.Paused:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, ReasonPaused, "the MachineDeployment is paused (spec.paused): rollouts wait, scaling goes on"
		conditions.Set(&st.Conditions, c, s.now)
		return
	case s.blocked != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, cmp.Or(s.blockedReason, ReasonSetNameTaken), s.blocked
		conditions.Set(&st.Conditions, c, s.now)
		return
	case complete(s):
		c.Reason, c.Message = ReasonNewSetAvailable, fmt.Sprintf("MachineSet %s has all %d Machines available", s.newSet.Name, s.replicas())
		conditions.Set(&st.Conditions, c, s.now)
		return
	case progressed || prev == nil || prev.Status != metav1.ConditionTrue && prev.Reason != ReasonDeadlineExceeded:
		c.Reason = ReasonSetUpdated
		if s.createdSet {
			c.Reason = ReasonNewSetCreated
		}
		c.Message = progressMessage(s, st)
		conditions.Restart(&st.Conditions, c, s.now) // progress: the deadline starts again
		return
	case prev.Reason == ReasonDeadlineExceeded:
		return // stays False until progress
	case s.now.Sub(prev.LastTransitionTime.Time) > deadline(md):
		c.Status, c.Reason = metav1.ConditionFalse, ReasonDeadlineExceeded
		c.Message = fmt.Sprintf("no progress for %s (progressDeadlineSeconds): %s", deadline(md), progressMessage(s, st))
		conditions.Set(&st.Conditions, c, s.now)
	}
}

func progressMessage(s *scope, st *v1beta1.MachineDeploymentStatus) string {
	msg := fmt.Sprintf("%d of %d Machines updated, %d available", st.UpdatedReplicas, s.replicas(), st.AvailableReplicas)
	if s.inPlacePending > 0 {
		msg += fmt.Sprintf("; %d Machines of MachineSet %s to be updated in place", s.inPlacePending, s.newSet.Name)
	}
	if s.waiting != "" {
		msg += "; " + s.waiting
	}
	return msg
}

// untilDeadline is how long until the rollout's progress deadline passes (0 when no deadline runs).
func untilDeadline(md *v1beta1.MachineDeployment, st v1beta1.MachineDeploymentStatus, now time.Time) time.Duration {
	c := meta.FindStatusCondition(st.Conditions, v1beta1.ProgressingCondition)
	if md.Spec.Paused || c == nil || c.Status != metav1.ConditionTrue || c.Reason == ReasonNewSetAvailable {
		return 0
	}
	return max(time.Second/10, c.LastTransitionTime.Add(deadline(md)).Sub(now)+time.Second)
}

func deadline(md *v1beta1.MachineDeployment) time.Duration {
	return time.Duration(ptr.Deref(md.Spec.ProgressDeadlineSeconds, 600)) * time.Second
}

// statusApply returns the server-side apply configuration of st, the whole status of md (the
// deployment controller owns all of it: write.WholeStatus sends every field). The UID makes the
// write fail rather than land on a deployment re-created under the same name.
func statusApply(md *v1beta1.MachineDeployment, st v1beta1.MachineDeploymentStatus) (*acv1beta1.MachineDeploymentApplyConfiguration, error) {
	ac, err := write.WholeStatus[acv1beta1.MachineDeploymentStatusApplyConfiguration](st)
	if err != nil {
		return nil, err
	}
	return acv1beta1.MachineDeployment(md.Name, md.Namespace).WithUID(md.UID).WithStatus(ac), nil
}
