package machine

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// emitTransitionEvents records an event for each change a user cares about between the status
// before and after a reconcile: a failure (Warning), and each new step of deletion. The routine
// way to Running emits none (a scale-up of N Machines used to write 2N events, InstanceCreated and
// Running): it is routine progress, logged at V(1), and what a person reads about it in `kubectl
// describe machine` is in the status — the phase and status.lastUpdated, InstanceProvisioned
// (True/InstanceExists, naming the instance, since its creation), NodeLinked (naming the Node) and
// Ready (True/NodeReady), each with the time of its last transition. What is not routine still
// gets an event: an instance adopted from an earlier attempt, an invalid configuration, a vanished
// instance, a failure.
func (r *Reconciler) emitTransitionEvents(ctx context.Context, before, after *v1beta1.Machine) {
	if before.Status.Phase != after.Status.Phase {
		switch after.Status.Phase {
		case v1beta1.MachinePhaseRunning:
			observeRunning(after)
			node := ""
			if after.Status.NodeRef != nil {
				node = after.Status.NodeRef.Name
			}
			log.FromContext(ctx).V(1).Info("machine is Running", "node", node)
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
	wasCut := meta.FindStatusCondition(before.Status.Conditions, v1beta1.InstanceInterruptionCondition)
	cut := meta.FindStatusCondition(after.Status.Conditions, v1beta1.InstanceInterruptionCondition)
	if cut != nil && (cut.Status == "True" || cut.Reason == ReasonInvalidInterruptionDeadline) && (wasCut == nil || wasCut.Status != cut.Status || wasCut.Reason != cut.Reason) {
		r.Recorder.Eventf(after, nil, "Warning", v1beta1.InstanceInterruptionCondition, "Interrupt", cut.Message)
	}
	wasDrained := meta.FindStatusCondition(before.Status.Conditions, v1beta1.DrainedCondition)
	drained := meta.FindStatusCondition(after.Status.Conditions, v1beta1.DrainedCondition)
	if drained != nil && drained.Status == "True" && (wasDrained == nil || wasDrained.Status != "True") && drained.Reason != ReasonDrainTimeout {
		r.Recorder.Eventf(after, nil, "Normal", drained.Reason, "Drain", drained.Message)
	}
}
