package drain

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestSummary protects the one-line condition message: it says whether the node is drained, how
// many pods remain, and names what blocks them, but no more than a few.
func TestSummary(t *testing.T) {
	pod := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	blockedByWeb := func(name string) BlockedPod {
		return BlockedPod{Pod: pod(name), Cause: CausePodDisruptionBudget, Reason: "blocked by PodDisruptionBudget default/web (allows 0 disruptions)"}
	}
	tests := map[string]struct {
		result Result
		want   string
	}{
		"a pod blocked by a budget is named with the budget": {
			result: Result{Node: "n1", Remaining: []types.NamespacedName{pod("a"), pod("b"), pod("web-0")}, Blocked: []BlockedPod{blockedByWeb("web-0")}},
			want:   "draining node n1: 3 pods remaining; pod default/web-0 blocked by PodDisruptionBudget default/web (allows 0 disruptions)",
		},
		"evictions of this step and elapsed time are reported": {
			result: Result{Node: "n1", Remaining: []types.NamespacedName{pod("a")}, Evicted: []types.NamespacedName{pod("a")}, Elapsed: 90*time.Second + 400*time.Millisecond},
			want:   "draining node n1 for 1m30s: 1 pod remaining (1 evicted in this step)",
		},
		"unreachable nodes say so": {
			result: Result{Node: "n1", Unreachable: true, Remaining: []types.NamespacedName{pod("a"), pod("b")}},
			want:   "draining unreachable node n1: 2 pods remaining",
		},
		"only the first three blocked pods are named": {
			result: Result{Node: "n1",
				Remaining: []types.NamespacedName{pod("a"), pod("b"), pod("c"), pod("d"), pod("e")},
				Blocked:   []BlockedPod{blockedByWeb("a"), blockedByWeb("b"), blockedByWeb("c"), blockedByWeb("d"), blockedByWeb("e")}},
			want: "draining node n1: 5 pods remaining" +
				"; pod default/a blocked by PodDisruptionBudget default/web (allows 0 disruptions)" +
				"; pod default/b blocked by PodDisruptionBudget default/web (allows 0 disruptions)" +
				"; pod default/c blocked by PodDisruptionBudget default/web (allows 0 disruptions)" +
				"; 2 more blocked",
		},
		"done, with time and pods left in place": {
			result: Result{Node: "n1", Done: true, Elapsed: 2 * time.Minute, Skipped: []SkippedPod{{Pod: pod("ds")}}},
			want:   "drained node n1 in 2m0s; 1 pod left in place",
		},
		"done without a start time": {
			result: Result{Node: "n1", Done: true},
			want:   "drained node n1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.result.Summary(); got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestRecord protects how a step's outcome is counted: evicted pods still remain until gone, pods
// already gone do not, and blocked or terminating pods keep the node from being drained.
func TestRecord(t *testing.T) {
	pod := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	deadline := &BlockedPod{Pod: pod("late"), Cause: CauseStepDeadline}
	tests := map[string]struct {
		plan          Plan
		outcomes      []outcome
		wantRemaining []types.NamespacedName
		wantEvicted   []types.NamespacedName
		wantBlocked   int
		wantDone      bool
	}{
		"evicted pods remain until a later step finds them gone": {
			plan:          Plan{Evict: []types.NamespacedName{pod("a"), pod("b")}},
			outcomes:      []outcome{{evicted: true}, {gone: true}},
			wantRemaining: []types.NamespacedName{pod("a")},
			wantEvicted:   []types.NamespacedName{pod("a")},
		},
		"a step with nothing left to evict, wait for or unblock is done": {
			plan:     Plan{Skipped: []SkippedPod{{Pod: pod("ds")}}},
			wantDone: true,
		},
		"terminating and blocked pods remain, sorted": {
			plan: Plan{
				Evict:       []types.NamespacedName{pod("late")},
				Terminating: []types.NamespacedName{pod("z")},
				Blocked:     []BlockedPod{{Pod: pod("m"), Cause: CausePodDisruptionBudget}},
			},
			outcomes:      []outcome{{blocked: deadline}},
			wantRemaining: []types.NamespacedName{pod("late"), pod("m"), pod("z")},
			wantBlocked:   2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var r Result
			r.record(&tc.plan, tc.outcomes)
			if !slices.Equal(r.Remaining, tc.wantRemaining) || !slices.Equal(r.Evicted, tc.wantEvicted) ||
				len(r.Blocked) != tc.wantBlocked || r.Done != tc.wantDone {
				t.Errorf("got Remaining=%v Evicted=%v %d blocked Done=%v\nwant Remaining=%v Evicted=%v %d blocked Done=%v",
					r.Remaining, r.Evicted, len(r.Blocked), r.Done, tc.wantRemaining, tc.wantEvicted, tc.wantBlocked, tc.wantDone)
			}
		})
	}
}
