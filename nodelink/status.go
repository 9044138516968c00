package nodelink

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// linkCondition computes the NodeLinked condition for decision d. The transition time moves only
// when the status changes, so an unchanged decision yields an unchanged condition (and no write).
func linkCondition(d decision, prev *metav1.Condition, generation int64, now metav1.Time) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionNodeLinked,
		Status:             metav1.ConditionFalse,
		Reason:             d.Reason,
		Message:            d.Message,
		ObservedGeneration: generation,
		LastTransitionTime: now,
	}
	switch {
	case d.Node != nil:
		c.Status = metav1.ConditionTrue
	case d.Reason == ReasonNodesUnreachable:
		c.Status = metav1.ConditionUnknown
	}
	if prev != nil && prev.Status == c.Status && !prev.LastTransitionTime.IsZero() {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}

// nodeRefFor returns the node reference to record for decision d: the decided Node, or prev
// unchanged when d links nothing (a deleted Node stays referenced; see ReasonNodeDeleted).
func nodeRefFor(d decision, prev *NodeRef) *NodeRef {
	if d.Node == nil {
		return prev
	}
	return &NodeRef{Name: d.Node.Name, UID: d.Node.UID}
}

// eventFor returns the type of the event to emit when a machine's NodeLinked reason changes from
// prevReason to d.Reason, and "" when none is due. Only what a user must act on is a Warning;
// the expected states (waiting, linked) emit nothing, so a large scale-up costs no event writes.
// NodesUnreachable is a wait too, and emits nothing either way: an outage of the Node side's API
// server would otherwise cost one event per waiting machine just when that cluster is in trouble,
// and its owner reports it once (see ReasonNodesUnreachable).
func eventFor(d decision, prevReason string) string {
	if d.Reason == prevReason && !d.Relinked {
		return ""
	}
	switch d.Reason {
	case ReasonMultipleNodesMatch, ReasonMultipleMachinesMatch, ReasonNodeLinkedToOtherMachine,
		ReasonIPMatchRefused, ReasonNodeDeleted:
		return corev1.EventTypeWarning
	case ReasonLinked:
		if d.Relinked || prevReason != "" && prevReason != ReasonWaitingForNode && prevReason != ReasonNodesUnreachable {
			return corev1.EventTypeNormal
		}
	}
	return ""
}
