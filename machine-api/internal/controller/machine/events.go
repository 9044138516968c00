package machine

import (
	"k8s.io/apimachinery/pkg/api/meta"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// emitTransitionEvents records an event for each change a user cares about between the status
// before and after a reconcile: a new phase, and each new step of deletion.
func (r *Reconciler) emitTransitionEvents(before, after *v1beta1.Machine) {
	if before.Status.Phase != after.Status.Phase {
		// Provisioning is not announced: InstanceCreated follows within the same second.
		switch after.Status.Phase {
		case v1beta1.MachinePhaseRunning:
			node := ""
			if after.Status.NodeRef != nil {
				node = after.Status.NodeRef.Name
			}
			r.Recorder.Eventf(after, nil, "Normal", EventRunning, "Provision", "Node %s is linked and Ready", node)
		case v1beta1.MachinePhaseFailed:
			msg := ""
			if after.Status.FailureMessage != nil {
				msg = *after.Status.FailureMessage
			}
			r.Recorder.Eventf(after, nil, "Warning", ReasonFailed, "Provision", "machine failed: %s", msg)
		}
	}
	was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.DeletingCondition)
	now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.DeletingCondition)
	if now != nil && (was == nil || was.Reason != now.Reason) {
		r.Recorder.Eventf(after, nil, "Normal", now.Reason, "Delete", now.Message)
	}
	wasDrained := meta.FindStatusCondition(before.Status.Conditions, v1beta1.DrainedCondition)
	drained := meta.FindStatusCondition(after.Status.Conditions, v1beta1.DrainedCondition)
	if drained != nil && drained.Status == "True" && (wasDrained == nil || wasDrained.Status != "True") && drained.Reason != ReasonDrainTimeout {
		r.Recorder.Eventf(after, nil, "Normal", drained.Reason, "Drain", drained.Message)
	}
}
