package cluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// emitTransitionEvents records an event for each change a user cares about between the status
// before and after a reconcile: a new phase, the workload API server going away or coming back,
// and each new step of deletion.
func (r *Reconciler) emitTransitionEvents(before, after *v1beta1.Cluster) {
	if before.Status.Phase != after.Status.Phase {
		switch after.Status.Phase {
		case v1beta1.ClusterPhaseProvisioning:
			r.Recorder.Eventf(after, nil, "Normal", ReasonProvisioning, "Provision", "creating the infrastructure")
		case v1beta1.ClusterPhaseProvisioned:
			r.Recorder.Eventf(after, nil, "Normal", EventProvisioned, "Provision", "the infrastructure is ready")
		case v1beta1.ClusterPhaseFailed:
			msg := ""
			if c := meta.FindStatusCondition(after.Status.Conditions, v1beta1.InfrastructureReadyCondition); c != nil {
				msg = c.Message
			}
			r.Recorder.Eventf(after, nil, "Warning", EventFailed, "Provision", "cluster failed: %s", msg)
		case v1beta1.ClusterPhaseDeleting:
			r.Recorder.Eventf(after, nil, "Normal", EventDeleting, "Delete", "deleting the cluster's machines, then its infrastructure")
		}
	}
	was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.WorkloadAPIReachableCondition)
	now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.WorkloadAPIReachableCondition)
	if now != nil && now.Status != metav1.ConditionUnknown && (was == nil || was.Reason != now.Reason) {
		kind := "Normal"
		if now.Status == metav1.ConditionFalse {
			kind = "Warning"
		}
		r.Recorder.Eventf(after, nil, kind, now.Reason, "LinkRemoteNodes", now.Message)
	}
	wasDel := meta.FindStatusCondition(before.Status.Conditions, v1beta1.DeletingCondition)
	del := meta.FindStatusCondition(after.Status.Conditions, v1beta1.DeletingCondition)
	if del != nil && (wasDel == nil || wasDel.Reason != del.Reason) {
		r.Recorder.Eventf(after, nil, "Normal", del.Reason, "Delete", del.Message)
	}
}
