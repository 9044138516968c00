package machinedeployment

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestNextRollingStep(t *testing.T) {
	cases := map[string]struct {
		replicas, surge, unavailable int32
		newSet                       setState
		stale, ordered               staleState
		old                          []setState
		want                         rollingStep
	}{
		"nothing stale, nothing old: nothing to do": {
			replicas: 3, surge: 1, newSet: st("new", 1, 3, 3, 4),
			want: rollingStep{newReplicas: 3, old: map[string]int32{}},
		},
		"all stale, surge 1: the set grows by one for a replacement": {
			replicas: 3, surge: 1, newSet: st("new", 1, 3, 3, 4), stale: staleState{count: 3, available: 3},
			want: rollingStep{newReplicas: 4, grow: true},
		},
		"the replacement is available: one stale Machine goes": {
			replicas: 3, surge: 1, newSet: st("new", 1, 4, 4, 4), stale: staleState{count: 3, available: 3},
			want: rollingStep{newReplicas: 3, old: map[string]int32{}, removeStale: 1},
		},
		"the replacement is not available yet: wait": {
			replicas: 3, surge: 1, newSet: st("new", 1, 4, 3, 4), stale: staleState{count: 3, available: 3},
			want: rollingStep{newReplicas: 4, old: map[string]int32{}},
		},
		"surge 0, unavailable 1: a stale Machine goes first": {
			replicas: 3, unavailable: 1, newSet: st("new", 1, 3, 3, 3), stale: staleState{count: 3, available: 3},
			want: rollingStep{newReplicas: 2, old: map[string]int32{}, removeStale: 1},
		},
		"an unavailable stale Machine goes without waiting for a replacement": {
			replicas: 3, surge: 1, newSet: st("new", 1, 4, 3, 4), stale: staleState{count: 2, available: 1},
			want: rollingStep{newReplicas: 3, old: map[string]int32{}, removeStale: 1},
		},
		"the last stale Machine's removal is ordered and a budget holds it: the set does not grow back for it": {
			replicas: 6, surge: 3, unavailable: 3, newSet: setState{name: "new", replicas: 6, actual: 7, available: 7, maxReplicas: 9, desired: -1},
			stale: staleState{count: 1, available: 1}, ordered: staleState{count: 1, available: 1},
			want: rollingStep{newReplicas: 6, old: map[string]int32{}},
		},
		"old sets shrink before stale Machines of the new set": {
			replicas: 3, surge: 1, newSet: st("new", 1, 2, 2, 4), stale: staleState{count: 1, available: 1},
			old:  []setState{st("old", 0, 2, 2, 4)},
			want: rollingStep{newReplicas: 2, old: map[string]int32{"old": 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := nextRollingStep(tc.replicas, tc.surge, tc.unavailable, tc.newSet, tc.stale, tc.ordered, tc.old)
			if got.newReplicas != tc.want.newReplicas || got.grow != tc.want.grow || got.removeStale != tc.want.removeStale || len(got.old) != len(tc.want.old) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for k, v := range tc.want.old {
				if got.old[k] != v {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

// TestReplacingStaleMachinesNeverLeavesBounds plays the replacement of every Machine of the
// current set (spec.rollout or a MachineClass edit) step by step, replacements becoming available
// at once, and checks at every step that there are never more than replicas + maxSurge Machines
// (held ones aside) nor fewer than replicas - maxUnavailable available, that no Machine is
// replaced twice (never more fresh Machines than replicas), and that it ends with none stale.
// Removals happen at once, or, under a disruption budget, one at a time and only while the
// deployment has nothing else to do: removals ordered by one step are still there at the next.
func TestReplacingStaleMachinesNeverLeavesBounds(t *testing.T) {
	for name, tc := range map[string]struct{ surge, unavailable string }{
		"surge 1, unavailable 0": {"1", "0"}, "surge 0, unavailable 1": {"0", "1"}, "25%, 25%": {"25%", "25%"}, "surge 3, unavailable 2": {"3", "2"}, "surge 3, unavailable 3": {"3", "3"},
	} {
		for _, held := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, held by a budget %t", name, held), func(t *testing.T) {
				const replicas = 6
				s, u := intstr.Parse(tc.surge), intstr.Parse(tc.unavailable)
				surge, unavailable := fenceposts(&v1beta1.MachineRollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}, replicas)
				newSet := st("new", 1, replicas, replicas, replicas+surge)
				stale := staleState{count: replicas, available: replicas}
				var ordered staleState
				gone := func(n int32) { // n ordered Machines are deleted
					ordered.count, ordered.available = ordered.count-n, ordered.available-n
					stale.count, stale.available = stale.count-n, stale.available-n
					newSet.actual, newSet.available = newSet.actual-n, newSet.available-n
				}
				for step := 0; stale.count > 0 || newSet.replicas != replicas || newSet.actual != replicas; step++ {
					if step > 100 {
						t.Fatalf("no progress: new %+v stale %+v ordered %+v", newSet, stale, ordered)
					}
					next := nextRollingStep(replicas, surge, unavailable, newSet, stale, ordered, nil)
					switch {
					case next.grow:
						created := next.newReplicas - newSet.replicas
						newSet.replicas, newSet.actual, newSet.available = next.newReplicas, newSet.actual+created, newSet.available+created
					case next.removeStale > 0:
						ordered.count += next.removeStale
						ordered.available += next.removeStale
						newSet.replicas = next.newReplicas
						if !held {
							gone(ordered.count)
						}
					case ordered.count > 0: // the budget lets one held Machine go
						gone(1)
					default:
						t.Fatalf("step %d: stuck with new %+v stale %+v", step, newSet, stale)
					}
					if newSet.actual-ordered.count > replicas+surge {
						t.Fatalf("step %d: %d Machines besides the held ones, above %d + %d", step, newSet.actual-ordered.count, replicas, surge)
					}
					if fresh := newSet.actual - stale.count; fresh > replicas {
						t.Fatalf("step %d: %d fresh Machines, above %d replicas: a Machine was replaced twice (new %+v stale %+v ordered %+v)", step, fresh, replicas, newSet, stale, ordered)
					}
					if newSet.available < replicas-unavailable {
						t.Fatalf("step %d: %d available, below %d - %d", step, newSet.available, replicas, unavailable)
					}
				}
			})
		}
	}
}

// TestOrderedRemovals protects which stale Machines count as already ordered out of the set: only
// those with the deployment's mark (the cluster-autoscaler's mark is another matter), no more than
// the set has Machines above its replicas, and they come first in the replacement order.
func TestOrderedRemovals(t *testing.T) {
	m := func(name, mark string) *v1beta1.Machine {
		out := &v1beta1.Machine{}
		out.Name = name
		if mark != "" {
			out.Annotations = map[string]string{v1beta1.DeleteMachineAnnotation: mark}
		}
		return out
	}
	availableUnlessC := func(m *v1beta1.Machine) bool { return m.Name != "c" }
	cases := map[string]struct {
		stale          []*v1beta1.Machine
		replicas, live int32
		want           staleState
		order          string
	}{
		"marked, and the set above its replicas by as many: all ordered": {
			stale: []*v1beta1.Machine{m("a", ""), m("b", replaceMark), m("c", replaceMark)}, replicas: 6, live: 8,
			want: staleState{count: 2, available: 1}, order: "bca",
		},
		"marked, but the replicas not lowered yet: none ordered": {
			stale: []*v1beta1.Machine{m("a", ""), m("b", replaceMark)}, replicas: 6, live: 6,
			want: staleState{}, order: "ba",
		},
		"one above the replicas, two marked: one ordered": {
			stale: []*v1beta1.Machine{m("b", replaceMark), m("c", replaceMark)}, replicas: 6, live: 7,
			want: staleState{count: 1, available: 1}, order: "bc",
		},
		"the autoscaler's mark is not the deployment's": {
			stale: []*v1beta1.Machine{m("a", "yes"), m("b", "")}, replicas: 6, live: 8,
			want: staleState{}, order: "ab",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := orderedRemovals(tc.stale, tc.replicas, tc.live, availableUnlessC)
			order := ""
			for _, s := range tc.stale {
				order += s.Name
			}
			if got != tc.want || order != tc.order {
				t.Fatalf("got %+v in order %s, want %+v in order %s", got, order, tc.want, tc.order)
			}
		})
	}
}
