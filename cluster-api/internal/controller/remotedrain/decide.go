package remotedrain

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// The decisions of the controller, as pure functions of the objects it read.

// hasHook reports whether m carries the drain hook.
func hasHook(m *machinev1.Machine) bool {
	return slices.ContainsFunc(m.Spec.LifecycleHooks.PreDrain, isDrainHook)
}

func isDrainHook(h machinev1.LifecycleHook) bool { return h.Name == v1beta1.DrainHookName }

// needsHold reports whether the drain hook must be added to m: a live remote Machine without it.
func needsHold(m *machinev1.Machine) bool {
	return v1beta1.HasRemoteNode(m.Labels) && m.DeletionTimestamp.IsZero() && !machinev1.IsPaused(m.Annotations) && !hasHook(m)
}

// policy is the drain policy's answer for a deleting Machine, with what this controller adds to
// the request machinedrain makes of it.
type policy struct {
	request  drain.NodeRequest
	decision drain.NodeDecision
	// skipReason is the condition reason of request.Skip, when there is one.
	skipReason string
}

// decide asks the drain policy (drain.DecideNode, through machinedrain, as machine-manager asks
// it for its own Nodes) about deleting Machine m of Cluster c (nil when the Cluster is gone) at
// now. This controller's own hook does not hold the drain, but every other preDrain hook does;
// the Cluster gone or being deleted skips it; and draining began when the WorkloadNodeDrained
// condition last turned False (drainStartTime), which nodeDrainTimeoutSeconds counts from.
func decide(m *machinev1.Machine, c *v1beta1.Cluster, now time.Time) policy {
	p := policy{request: machinedrain.Request(m, v1beta1.DrainHookName, drainStartTime(m), now)}
	reason, _ := machinedrain.Skip(m)
	p.skipReason = string(reason)
	if p.request.Skip == "" {
		p.skipReason, p.request.Skip = clusterGoesAway(m, c)
	}
	p.decision = drain.DecideNode(p.request)
	return p
}

// clusterGoesAway says why the deleting Machine m's Node need not be drained because its whole
// workload cluster goes away (a condition reason and a message), or returns "". c is the
// Machine's Cluster, nil when it is gone.
func clusterGoesAway(m *machinev1.Machine, c *v1beta1.Cluster) (reason, message string) {
	cluster := m.Labels[v1beta1.ClusterNameLabel]
	switch {
	case c == nil:
		return ReasonClusterNotFound, fmt.Sprintf("draining Node %s skipped: Cluster %s is gone, and its workload cluster with it", m.Status.NodeRef.Name, cluster)
	case !c.DeletionTimestamp.IsZero():
		return ReasonClusterDeleting, fmt.Sprintf("draining Node %s skipped: Cluster %s is being deleted, and its whole workload cluster with it", m.Status.NodeRef.Name, cluster)
	}
	return "", ""
}

// drainStartTime is when this controller began draining m's Node: the last transition of the
// WorkloadNodeDrained condition to False, which it writes with its first drain step (the
// condition is Unknown while other preDrain hooks hold the drain). It lives in the Machine's
// status, so it survives a restart of the controller. nil when draining has not begun.
func drainStartTime(m *machinev1.Machine) *metav1.Time {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.WorkloadNodeDrainedCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.LastTransitionTime.IsZero() {
		return nil
	}
	return &c.LastTransitionTime
}

// waitRequeue is how long to wait before the next drain step: drainPoll, or less when the drain
// deadline comes sooner.
func waitRequeue(d drain.NodeDecision, now time.Time) time.Duration {
	if !d.Deadline.IsZero() && d.Deadline.Sub(now) < drainPoll {
		return max(d.Deadline.Sub(now), time.Second)
	}
	return drainPoll
}

// nextStep is how long to wait before the next drain step of a drain that is not done:
// waitRequeue, or less when a pod still holding the drain is to be deleted sooner (next, the
// step's drain.Result.NextDeletion; zero when none is).
func nextStep(d drain.NodeDecision, next, now time.Time) time.Duration {
	wait := waitRequeue(d, now)
	if !next.IsZero() && next.Sub(now) < wait {
		return max(next.Sub(now), time.Second)
	}
	return wait
}

// letGo completes a waiting message with what lets the Machine go: the deadline when it has one,
// otherwise what the user can do. It does not change from one poll to the next.
func letGo(d drain.NodeDecision) string {
	if !d.Deadline.IsZero() {
		return fmt.Sprintf("gives up at %s (spec.deletion.nodeDrainTimeoutSeconds)", d.Deadline.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("to delete the machine without this drain, annotate it %s or remove its preDrain hook %s",
		machinev1.ExcludeNodeDrainingAnnotation, v1beta1.DrainHookName)
}

// withoutDrainHook returns hooks without the drain hook.
func withoutDrainHook(hooks []machinev1.LifecycleHook) []machinev1.LifecycleHook {
	return slices.DeleteFunc(slices.Clone(hooks), isDrainHook)
}
