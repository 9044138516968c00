package remotedrain

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// The decisions of the controller, as pure functions of the objects it read.

// isRemote reports whether labels mark a Machine of a Cluster whose Node lives in the workload
// cluster.
func isRemote(labels map[string]string) bool {
	return labels[v1beta1.ClusterNameLabel] != "" && labels[v1beta1.RemoteNodesLabel] == "true"
}

// hasHook reports whether m carries the drain hook.
func hasHook(m *machinev1.Machine) bool {
	return slices.ContainsFunc(m.Spec.LifecycleHooks.PreDrain, isDrainHook)
}

func isDrainHook(h machinev1.LifecycleHook) bool { return h.Name == v1beta1.DrainHookName }

// needsHold reports whether the drain hook must be added to m: a live remote Machine without it.
func needsHold(m *machinev1.Machine) bool {
	return isRemote(m.Labels) && m.DeletionTimestamp.IsZero() && !machinev1.IsPaused(m.Annotations) && !hasHook(m)
}

// nothingToDrain says why the deleting Machine m's hook can go without a drain (a condition
// reason and a message), or returns "" when its Node must be drained. c is the Machine's Cluster,
// nil when it is gone.
func nothingToDrain(m *machinev1.Machine, c *v1beta1.Cluster) (reason, message string) {
	cluster := m.Labels[v1beta1.ClusterNameLabel]
	switch {
	case hasAnnotation(m, machinev1.ExcludeNodeDrainingAnnotation):
		return ReasonDrainExcluded, "draining skipped: the machine has the " + machinev1.ExcludeNodeDrainingAnnotation + " annotation"
	case m.Status.NodeRef == nil:
		return ReasonNoNode, "draining skipped: the machine has no Node"
	case c == nil:
		return ReasonClusterNotFound, fmt.Sprintf("draining Node %s skipped: Cluster %s is gone, and its workload cluster with it", m.Status.NodeRef.Name, cluster)
	case !c.DeletionTimestamp.IsZero():
		return ReasonClusterDeleting, fmt.Sprintf("draining Node %s skipped: Cluster %s is being deleted, and its whole workload cluster with it", m.Status.NodeRef.Name, cluster)
	}
	return "", ""
}

// drainDeadline returns spec.deletion.nodeDrainTimeoutSeconds and when the drain of the deleting
// Machine m gives up: that long after its deletionTimestamp. ok is false without a timeout (unset
// or 0: wait until drained).
func drainDeadline(m *machinev1.Machine) (timeout time.Duration, deadline time.Time, ok bool) {
	d := m.Spec.Deletion
	if d == nil || d.NodeDrainTimeoutSeconds == nil || *d.NodeDrainTimeoutSeconds <= 0 || m.DeletionTimestamp.IsZero() {
		return 0, time.Time{}, false
	}
	timeout = time.Duration(*d.NodeDrainTimeoutSeconds) * time.Second
	return timeout, m.DeletionTimestamp.Add(timeout), true
}

// waitRequeue is how long to wait before the next drain step: drainPoll, or less when the drain
// deadline comes sooner.
func waitRequeue(m *machinev1.Machine, now time.Time) time.Duration {
	_, deadline, ok := drainDeadline(m)
	if ok && deadline.Sub(now) < drainPoll {
		return max(deadline.Sub(now), time.Second)
	}
	return drainPoll
}

// letGo completes a waiting message with what lets the Machine go: the deadline when it has one,
// otherwise what the user can do. It does not change from one poll to the next.
func letGo(m *machinev1.Machine) string {
	if _, deadline, ok := drainDeadline(m); ok {
		return fmt.Sprintf("gives up at %s (spec.deletion.nodeDrainTimeoutSeconds)", deadline.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("to delete the machine without this drain, annotate it %s or remove its preDrain hook %s",
		machinev1.ExcludeNodeDrainingAnnotation, v1beta1.DrainHookName)
}

// withoutDrainHook returns hooks without the drain hook.
func withoutDrainHook(hooks []machinev1.LifecycleHook) []machinev1.LifecycleHook {
	return slices.DeleteFunc(slices.Clone(hooks), isDrainHook)
}

func hasAnnotation(o metav1.Object, key string) bool {
	_, ok := o.GetAnnotations()[key]
	return ok
}
