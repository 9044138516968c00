package drain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"machineapi.dev/drain/internal/test"
)

// TestDecideTerminating protects unreachable-node mode: pods already terminating are waited for,
// except on an unreachable node where long grace periods are shortened and pods overdue by more
// than the timeout are no longer waited for.
func TestDecideTerminating(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const timeout = 5 * time.Second
	pod := func() *test.PodBuilder { return test.Pod("default", "p").OnNode("n1").Running() }
	tests := map[string]struct {
		pod         *corev1.Pod
		unreachable bool
		want        terminatingAction
	}{
		"a running pod is evicted": {
			pod: pod().Build(), want: evictPod,
		},
		"a running pod on an unreachable node is evicted": {
			pod: pod().Build(), unreachable: true, want: evictPod,
		},
		"a terminating pod on a reachable node is waited for, however long": {
			pod: pod().Terminating(now.Add(-time.Hour), 1).Build(), want: waitForPod,
		},
		"unreachable: a pod overdue by more than the timeout is not waited for": {
			pod: pod().Terminating(now.Add(-7*time.Second), 1).Build(), unreachable: true, want: stopWaiting,
		},
		"unreachable: a pod overdue by less than the timeout is waited for": {
			pod: pod().Terminating(now.Add(-4*time.Second), 1).Build(), unreachable: true, want: waitForPod,
		},
		"unreachable: a pod overdue by exactly the timeout is still waited for": {
			pod: pod().Terminating(now.Add(-6*time.Second), 1).Build(), unreachable: true, want: waitForPod,
		},
		"unreachable: a pod with a long grace period ahead is evicted again with the short one": {
			pod: pod().Terminating(now.Add(-10*time.Second), 3600).Build(), unreachable: true, want: shortenGracePeriod,
		},
		"unreachable: a pod already on the short grace period is not evicted again": {
			pod: pod().Terminating(now, 1).Build(), unreachable: true, want: waitForPod,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got, _ := decideTerminating(tc.pod, now, tc.unreachable, timeout); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNodeUnreachable protects how unreachable-node mode is detected: only Ready=Unknown counts.
func TestNodeUnreachable(t *testing.T) {
	tests := map[string]struct {
		node *corev1.Node
		want bool
	}{
		"Ready=Unknown":      {node: test.Node("n1").Ready(corev1.ConditionUnknown).Build(), want: true},
		"Ready=True":         {node: test.Node("n1").Ready(corev1.ConditionTrue).Build()},
		"Ready=False":        {node: test.Node("n1").Ready(corev1.ConditionFalse).Build()},
		"no Ready condition": {node: test.Node("n1").Build()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nodeUnreachable(tc.node); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
