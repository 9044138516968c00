package machinedrain

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// SkipReason says, in one CamelCase word fit for a condition reason, why a Machine's Node is not
// drained at all.
type SkipReason string

const (
	// SkipExcluded: the Machine has the v1beta1.ExcludeNodeDrainingAnnotation annotation.
	SkipExcluded SkipReason = "DrainExcluded"
	// SkipNoNode: the Machine has no status.nodeRef.
	SkipNoNode SkipReason = "NoNode"
)

// SkipVolumeWait says why the wait for Machine m's Node's volumes to detach is skipped whoever
// waits, or returns "": the Machine has the v1beta1.ExcludeWaitForNodeVolumeDetachAnnotation
// annotation.
func SkipVolumeWait(m *v1beta1.Machine) string {
	if _, ok := m.Annotations[v1beta1.ExcludeWaitForNodeVolumeDetachAnnotation]; ok {
		return "volume wait skipped: the machine has the " + v1beta1.ExcludeWaitForNodeVolumeDetachAnnotation + " annotation"
	}
	return ""
}

// Skip says why Machine m's Node is not drained, whoever drains it, with a message for a
// condition or an event; it returns "" when m's Node must be drained.
func Skip(m *v1beta1.Machine) (SkipReason, string) {
	if _, ok := m.Annotations[v1beta1.ExcludeNodeDrainingAnnotation]; ok {
		return SkipExcluded, "draining skipped: the machine has the " + v1beta1.ExcludeNodeDrainingAnnotation + " annotation"
	}
	if m.Status.NodeRef == nil {
		return SkipNoNode, "draining skipped: the machine has no Node"
	}
	return "", ""
}

// Request returns the drain policy's request about Machine m's Node at now. own is the name of
// the caller's own preDrain hook, which does not hold its drain ("" when it has none); startedAt
// is the caller's record of when it began draining m's Node, nil when it has not.
//
//   - HeldBy: m's other preDrain hooks, as "name (owner owner)";
//   - Skip: the message of Skip(m);
//   - StartedAt: startedAt;
//   - Timeout: spec.deletion.nodeDrainTimeoutSeconds, 0 (no bound) when unset;
//   - PodDeadline: spec.deletion.drainDeadlineSeconds, 0 (none) when unset.
func Request(m *v1beta1.Machine, own string, startedAt *metav1.Time, now time.Time) drain.NodeRequest {
	r := drain.NodeRequest{Now: now}
	for _, h := range m.Spec.LifecycleHooks.PreDrain {
		if h.Name != own {
			r.HeldBy = append(r.HeldBy, fmt.Sprintf("%s (owner %s)", h.Name, h.Owner))
		}
	}
	_, r.Skip = Skip(m)
	if startedAt != nil {
		r.StartedAt = startedAt.Time
	}
	if d := m.Spec.Deletion; d != nil && d.NodeDrainTimeoutSeconds != nil {
		r.Timeout = time.Duration(*d.NodeDrainTimeoutSeconds) * time.Second
	}
	if d := m.Spec.Deletion; d != nil && d.DrainDeadlineSeconds != nil {
		r.PodDeadline = time.Duration(*d.DrainDeadlineSeconds) * time.Second
	}
	return r
}

// LocalRequest is the request machine-manager makes about a Node of its own cluster: Request
// with no own hook (every preDrain hook holds the drain), and the start of draining where
// machine-manager records it, status.deletion.nodeDrainStartTime.
func LocalRequest(m *v1beta1.Machine, now time.Time) drain.NodeRequest {
	var startedAt *metav1.Time
	if m.Status.Deletion != nil {
		startedAt = m.Status.Deletion.NodeDrainStartTime
	}
	return Request(m, "", startedAt, now)
}
