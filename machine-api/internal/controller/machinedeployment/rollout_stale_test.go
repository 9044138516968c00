package machinedeployment

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestNextRollingStep(t *testing.T) {
	cases := map[string]struct {
		replicas, surge, unavailable int32
		newSet                       setState
		stale                        staleState
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
		"old sets shrink before stale Machines of the new set": {
			replicas: 3, surge: 1, newSet: st("new", 1, 2, 2, 4), stale: staleState{count: 1, available: 1},
			old:  []setState{st("old", 0, 2, 2, 4)},
			want: rollingStep{newReplicas: 2, old: map[string]int32{"old": 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := nextRollingStep(tc.replicas, tc.surge, tc.unavailable, tc.newSet, tc.stale, tc.old)
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
// nor fewer than replicas - maxUnavailable available, and that it ends with none stale.
func TestReplacingStaleMachinesNeverLeavesBounds(t *testing.T) {
	for name, tc := range map[string]struct{ surge, unavailable string }{
		"surge 1, unavailable 0": {"1", "0"}, "surge 0, unavailable 1": {"0", "1"}, "25%, 25%": {"25%", "25%"}, "surge 3, unavailable 2": {"3", "2"},
	} {
		t.Run(name, func(t *testing.T) {
			const replicas = 6
			s, u := intstr.Parse(tc.surge), intstr.Parse(tc.unavailable)
			surge, unavailable := fenceposts(&v1beta1.MachineRollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}, replicas)
			newSet := st("new", 1, replicas, replicas, replicas+surge)
			stale := staleState{count: replicas, available: replicas}
			for step := 0; stale.count > 0 || newSet.replicas != replicas; step++ {
				if step > 50 {
					t.Fatalf("no progress: new %+v stale %+v", newSet, stale)
				}
				next := nextRollingStep(replicas, surge, unavailable, newSet, stale, nil)
				switch {
				case next.grow:
					newSet.replicas, newSet.actual, newSet.available = next.newReplicas, next.newReplicas, next.newReplicas
				case next.removeStale > 0:
					stale.count -= next.removeStale
					stale.available -= next.removeStale
					newSet.replicas, newSet.actual, newSet.available = next.newReplicas, next.newReplicas, next.newReplicas
				default:
					t.Fatalf("step %d: stuck with new %+v stale %+v", step, newSet, stale)
				}
				if newSet.replicas > replicas+surge {
					t.Fatalf("step %d: %d Machines, above %d + %d", step, newSet.replicas, replicas, surge)
				}
				if newSet.available < replicas-unavailable {
					t.Fatalf("step %d: %d available, below %d - %d", step, newSet.available, replicas, unavailable)
				}
			}
		})
	}
}
