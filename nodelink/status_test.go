package nodelink

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLinkCondition(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	before := metav1.NewTime(now.Add(-time.Hour))
	n1 := &nodeView{Name: "n1"}
	tests := map[string]struct {
		d        decision
		prev     *metav1.Condition
		status   metav1.ConditionStatus
		changeAt metav1.Time
	}{
		"first link": {
			d:      decision{Node: n1, Reason: ReasonLinked, Message: "linked"},
			status: metav1.ConditionTrue, changeAt: now,
		},
		"still linked: the transition time stays": {
			d:      decision{Node: n1, Reason: ReasonLinked, Message: "linked"},
			prev:   &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonLinked, LastTransitionTime: before},
			status: metav1.ConditionTrue, changeAt: before,
		},
		"another False reason: the transition time stays": {
			d:      decision{Reason: ReasonMultipleMachinesMatch},
			prev:   &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonWaitingForNode, LastTransitionTime: before},
			status: metav1.ConditionFalse, changeAt: before,
		},
		"Node deleted: the transition time moves": {
			d:      decision{Reason: ReasonNodeDeleted},
			prev:   &metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonLinked, LastTransitionTime: before},
			status: metav1.ConditionFalse, changeAt: now,
		},
		"Nodes out of sight while waiting: Unknown, the transition time moves": {
			d:      decision{Reason: ReasonNodesUnreachable, Message: "the Node side's API server has not answered"},
			prev:   &metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonWaitingForNode, LastTransitionTime: before},
			status: metav1.ConditionUnknown, changeAt: now,
		},
		"Nodes still out of sight: the transition time stays": {
			d:      decision{Reason: ReasonNodesUnreachable, Message: "the Node side's API server has not answered"},
			prev:   &metav1.Condition{Status: metav1.ConditionUnknown, Reason: ReasonNodesUnreachable, LastTransitionTime: before},
			status: metav1.ConditionUnknown, changeAt: before,
		},
		"Nodes in sight again, still none: False, the transition time moves": {
			d:      decision{Reason: ReasonWaitingForNode},
			prev:   &metav1.Condition{Status: metav1.ConditionUnknown, Reason: ReasonNodesUnreachable, LastTransitionTime: before},
			status: metav1.ConditionFalse, changeAt: now,
		},
		"Nodes in sight again, with one: linked": {
			d:      decision{Node: n1, Reason: ReasonLinked},
			prev:   &metav1.Condition{Status: metav1.ConditionUnknown, Reason: ReasonNodesUnreachable, LastTransitionTime: before},
			status: metav1.ConditionTrue, changeAt: now,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := linkCondition(tc.d, tc.prev, 7, now)
			if c.Type != ConditionNodeLinked || c.Status != tc.status || c.Reason != tc.d.Reason || c.Message != tc.d.Message ||
				c.ObservedGeneration != 7 || !c.LastTransitionTime.Equal(&tc.changeAt) {
				t.Errorf("linkCondition() = %+v, want status %s reason %s transition %s", c, tc.status, tc.d.Reason, tc.changeAt)
			}
		})
	}
}

func TestNodeRefFor(t *testing.T) {
	prev := &NodeRef{Name: "old", UID: "u-old"}
	if got := nodeRefFor(decision{Reason: ReasonNodeDeleted}, prev); got != prev {
		t.Errorf("a deleted Node's reference must be kept, got %v", got)
	}
	if got := nodeRefFor(decision{Node: &nodeView{Name: "n1", UID: "u1"}}, prev); *got != (NodeRef{Name: "n1", UID: "u1"}) {
		t.Errorf("got %v, want n1/u1", got)
	}
}

func TestEventFor(t *testing.T) {
	tests := map[string]struct {
		d          decision
		prevReason string
		want       string
	}{
		"first link from waiting: no event":        {decision{Reason: ReasonLinked}, ReasonWaitingForNode, ""},
		"first link of a new machine":              {decision{Reason: ReasonLinked}, "", ""},
		"waiting: no event":                        {decision{Reason: ReasonWaitingForNode}, "", ""},
		"conflict appears":                         {decision{Reason: ReasonMultipleMachinesMatch}, ReasonWaitingForNode, corev1.EventTypeWarning},
		"conflict persists: no repeat":             {decision{Reason: ReasonMultipleMachinesMatch}, ReasonMultipleMachinesMatch, ""},
		"conflict resolved":                        {decision{Reason: ReasonLinked}, ReasonMultipleMachinesMatch, corev1.EventTypeNormal},
		"Node deleted":                             {decision{Reason: ReasonNodeDeleted}, ReasonLinked, corev1.EventTypeWarning},
		"re-registered Node linked again":          {decision{Reason: ReasonLinked, Relinked: true}, ReasonLinked, corev1.EventTypeNormal},
		"IP match refused":                         {decision{Reason: ReasonIPMatchRefused}, "", corev1.EventTypeWarning},
		"Node linked to another machine":           {decision{Reason: ReasonNodeLinkedToOtherMachine}, "", corev1.EventTypeWarning},
		"more than one Node, first reconcile":      {decision{Reason: ReasonMultipleNodesMatch}, "", corev1.EventTypeWarning},
		"Nodes out of sight: no event per machine": {decision{Reason: ReasonNodesUnreachable}, ReasonWaitingForNode, ""},
		"new machine while Nodes are out of sight": {decision{Reason: ReasonNodesUnreachable}, "", ""},
		"Nodes in sight again, none yet: no event": {decision{Reason: ReasonWaitingForNode}, ReasonNodesUnreachable, ""},
		"Nodes in sight again, linked: no event":   {decision{Reason: ReasonLinked}, ReasonNodesUnreachable, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := eventFor(tc.d, tc.prevReason); got != tc.want {
				t.Errorf("eventFor() = %q, want %q", got, tc.want)
			}
		})
	}
}
