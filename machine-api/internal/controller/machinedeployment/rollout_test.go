package machinedeployment

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFenceposts(t *testing.T) {
	ru := func(surge, unavailable string) *v1beta1.MachineRollingUpdateDeployment {
		s, u := intstr.Parse(surge), intstr.Parse(unavailable)
		return &v1beta1.MachineRollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
	}
	cases := map[string]struct {
		ru              *v1beta1.MachineRollingUpdateDeployment
		replicas        int32
		wantSurge       int32
		wantUnavailable int32
	}{
		"unset is surge 1, unavailable 0":                      {ru: nil, replicas: 6, wantSurge: 1, wantUnavailable: 0},
		"integers as given":                                    {ru: ru("2", "3"), replicas: 10, wantSurge: 2, wantUnavailable: 3},
		"surge percent rounds up":                              {ru: ru("25%", "0"), replicas: 10, wantSurge: 3, wantUnavailable: 0},
		"unavailable percent rounds down":                      {ru: ru("0", "25%"), replicas: 10, wantSurge: 0, wantUnavailable: 2},
		"both percentages of 7":                                {ru: ru("10%", "50%"), replicas: 7, wantSurge: 1, wantUnavailable: 3},
		"100% of both":                                         {ru: ru("100%", "100%"), replicas: 4, wantSurge: 4, wantUnavailable: 4},
		"both rounding to 0 allow one unavailable to progress": {ru: ru("0%", "1%"), replicas: 10, wantSurge: 0, wantUnavailable: 1},
		"zero replicas":                                        {ru: ru("25%", "25%"), replicas: 0, wantSurge: 0, wantUnavailable: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, u := fenceposts(tc.ru, tc.replicas)
			if s != tc.wantSurge || u != tc.wantUnavailable {
				t.Fatalf("surge %d unavailable %d, want %d %d", s, u, tc.wantSurge, tc.wantUnavailable)
			}
		})
	}
}

// st is a set of replicas Machines, all existing, available of them available, created minute
// minutes after t0, last scaled for a deployment of maxReplicas (replicas + surge).
func st(name string, minute int, replicas, available, maxReplicas int32) setState {
	return setState{name: name, created: t0.Add(time.Duration(minute) * time.Minute), replicas: replicas, actual: replicas,
		available: available, maxReplicas: maxReplicas, desired: -1}
}

func TestNewSetTarget(t *testing.T) {
	cases := map[string]struct {
		replicas, surge int32
		newSet          setState
		old             []setState
		want            int32
	}{
		"a new set starts at the surge":               {replicas: 6, surge: 1, newSet: st("new", 1, 0, 0, 0), old: []setState{st("old", 0, 6, 6, 7)}, want: 1},
		"it grows as old sets shrink":                 {replicas: 6, surge: 1, newSet: st("new", 1, 2, 2, 7), old: []setState{st("old", 0, 4, 4, 7)}, want: 3},
		"no growth at replicas + surge":               {replicas: 6, surge: 1, newSet: st("new", 1, 2, 1, 7), old: []setState{st("old", 0, 5, 5, 7)}, want: 2},
		"never above replicas":                        {replicas: 3, surge: 5, newSet: st("new", 1, 2, 2, 8), old: []setState{st("old", 0, 0, 0, 8)}, want: 3},
		"a new set above replicas comes down to them": {replicas: 3, surge: 1, newSet: st("new", 1, 5, 5, 4), want: 3},
		"a large surge creates all at once":           {replicas: 4, surge: 4, newSet: st("new", 1, 0, 0, 0), old: []setState{st("old", 0, 4, 4, 8)}, want: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			all := append([]setState{tc.newSet}, tc.old...)
			if got := newSetTarget(tc.replicas, tc.surge, tc.newSet, all); got != tc.want {
				t.Fatalf("new set target %d, want %d", got, tc.want)
			}
		})
	}
}

func TestScaleDownOld(t *testing.T) {
	cases := map[string]struct {
		replicas, unavailable int32
		newSet                *setState
		old                   []setState
		want                  map[string]int32
	}{
		"maxUnavailable 0: one old Machine goes once a new one is available": {
			replicas: 6, unavailable: 0, newSet: ref(st("new", 9, 1, 1, 7)), old: []setState{st("old", 0, 6, 6, 7)},
			want: map[string]int32{"old": 5},
		},
		"maxUnavailable 0: nothing goes while the new Machine is not available": {
			replicas: 6, unavailable: 0, newSet: ref(st("new", 9, 1, 0, 7)), old: []setState{st("old", 0, 6, 6, 7)},
			want: map[string]int32{},
		},
		"maxUnavailable 2 takes two at once": {
			replicas: 6, unavailable: 2, newSet: ref(st("new", 9, 0, 0, 6)), old: []setState{st("old", 0, 6, 6, 6)},
			want: map[string]int32{"old": 4},
		},
		"unavailable old Machines go first, without counting against availability": {
			replicas: 6, unavailable: 2, newSet: ref(st("new", 9, 0, 0, 6)), old: []setState{st("old", 0, 6, 4, 6)},
			want: map[string]int32{"old": 4},
		},
		"with maxUnavailable 0 an unavailable new Machine holds everything, even unhealthy old ones": {
			replicas: 6, unavailable: 0, newSet: ref(st("new", 9, 1, 0, 7)), old: []setState{st("old", 0, 6, 4, 7)},
			want: map[string]int32{},
		},
		"the oldest set shrinks first": {
			replicas: 4, unavailable: 1, newSet: ref(st("new", 9, 1, 1, 5)),
			old:  []setState{st("older", 0, 2, 2, 5), st("old", 5, 2, 2, 5)},
			want: map[string]int32{"older": 0},
		},
		"no old Machines, nothing to do": {
			replicas: 3, unavailable: 1, newSet: ref(st("new", 9, 3, 3, 4)), old: []setState{st("old", 0, 0, 0, 4)},
			want: map[string]int32{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := scaleDownOld(tc.replicas, tc.unavailable, tc.newSet, tc.old)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("old targets %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRollingUpdateNeverDropsBelowAvailability plays a rolling update step by step, new Machines
// becoming available at once, and checks the bounds at every step.
func TestRollingUpdateNeverDropsBelowAvailability(t *testing.T) {
	for name, tc := range map[string]struct{ surge, unavailable string }{
		"surge 1, unavailable 0": {"1", "0"}, "surge 0, unavailable 1": {"0", "1"}, "25%, 25%": {"25%", "25%"}, "surge 3, unavailable 2": {"3", "2"},
	} {
		t.Run(name, func(t *testing.T) {
			const replicas = 6
			s, u := intstr.Parse(tc.surge), intstr.Parse(tc.unavailable)
			surge, unavailable := fenceposts(&v1beta1.MachineRollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}, replicas)
			old, newSet := st("old", 0, replicas, replicas, 0), st("new", 1, 0, 0, 0)
			for step := 0; old.replicas > 0 || newSet.replicas < replicas; step++ {
				if step > 50 {
					t.Fatalf("no progress: old %+v new %+v", old, newSet)
				}
				if target := newSetTarget(replicas, surge, newSet, []setState{old, newSet}); target != newSet.replicas {
					newSet.replicas, newSet.available = target, target
				} else if t2, ok := scaleDownOld(replicas, unavailable, &newSet, []setState{old})["old"]; ok {
					old.replicas, old.available = t2, t2
				}
				if total := old.replicas + newSet.replicas; total > replicas+surge {
					t.Fatalf("step %d: %d Machines, above %d + %d", step, total, replicas, surge)
				}
				if avail := old.available + newSet.available; avail < replicas-unavailable {
					t.Fatalf("step %d: %d available, below %d - %d", step, avail, replicas, unavailable)
				}
			}
		})
	}
}

func TestProportional(t *testing.T) {
	cases := map[string]struct {
		replicas, surge, statusReplicas int32
		sets                            []setState
		want                            map[string]int32
	}{
		"4 -> 8 with surge 2 mid-rollout: both sets grow in proportion": {
			// The deployment was 4 + 2 surge = 6 when the sets were last scaled; now 8 + 2 = 10.
			replicas: 8, surge: 2,
			sets: []setState{st("old", 0, 4, 4, 6), st("new", 1, 2, 0, 6)},
			want: map[string]int32{"old": 7, "new": 3},
		},
		"10 -> 5 mid-rollout shrinks both, leftovers to the largest (oldest on ties)": {
			replicas: 5, surge: 3,
			sets: []setState{st("old", 0, 8, 8, 13), st("new", 1, 5, 0, 13)},
			want: map[string]int32{"old": 5, "new": 3},
		},
		"rounding leftovers go to the largest set": {
			replicas: 10, surge: 0,
			sets: []setState{st("a", 0, 1, 1, 3), st("b", 1, 1, 1, 3), st("c", 2, 1, 1, 3)},
			want: map[string]int32{"a": 3, "b": 3, "c": 4},
		},
		"to zero": {
			replicas: 0, surge: 1,
			sets: []setState{st("old", 0, 3, 3, 4), st("new", 1, 1, 0, 4)},
			want: map[string]int32{"old": 0, "new": 0},
		},
		"the sets already add up to the new total (6 -> 5 with surge 1 at old 2, new 4): both keep their replicas and get the new size recorded": {
			// The state a conflict on the new set's write leaves: the old set was scaled for 5, the
			// new one still records 6; without its new size every reconcile is a scaling event.
			replicas: 5, surge: 1,
			sets: []setState{st("old", 0, 2, 2, 6), st("new", 1, 4, 4, 7)},
			want: map[string]int32{"old": 2, "new": 4},
		},
		"sets without replicas are left alone": {
			replicas: 6, surge: 0,
			sets: []setState{st("empty", 0, 0, 0, 3), st("a", 1, 2, 2, 3), st("b", 2, 1, 1, 3)},
			want: map[string]int32{"a": 4, "b": 2},
		},
		"without a recorded size the status replicas stand in": {
			replicas: 6, surge: 0, statusReplicas: 3,
			sets: []setState{st("a", 0, 2, 2, 0), st("b", 1, 1, 1, 0)},
			want: map[string]int32{"a": 4, "b": 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := proportional(tc.replicas, tc.surge, tc.statusReplicas, tc.sets)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("targets %v, want %v", got, tc.want)
			}
			var total int32
			for _, v := range got {
				total += v
			}
			if allowed := tc.replicas + tc.surge; tc.replicas > 0 && total != allowed {
				t.Fatalf("total %d, want replicas + surge = %d", total, allowed)
			}
		})
	}
}

// TestProportionalAppliesOnce: once the sets carry the new size and its annotations, computing the
// scale again changes nothing (Gardener MCM #754, #816 applied a scale twice).
func TestProportionalAppliesOnce(t *testing.T) {
	sets := []setState{st("old", 0, 4, 4, 6), st("new", 1, 2, 0, 6)}
	first := proportional(8, 2, 6, sets)
	for i := range sets {
		sets[i].replicas = first[sets[i].name]
		sets[i].maxReplicas = 10
	}
	if again := proportional(8, 2, 10, sets); !maps.Equal(again, first) {
		t.Fatalf("the scale was applied again: %v after %v", again, first)
	}
}

func TestActiveOrLatest(t *testing.T) {
	cases := map[string]struct {
		newSet *setState
		old    []setState
		want   string
	}{
		"the only set with replicas":         {newSet: ref(st("new", 2, 0, 0, 0)), old: []setState{st("old", 0, 3, 3, 0)}, want: "old"},
		"several with replicas: none":        {newSet: ref(st("new", 2, 1, 0, 0)), old: []setState{st("old", 0, 3, 3, 0)}, want: ""},
		"none with replicas: the new one":    {newSet: ref(st("new", 2, 0, 0, 0)), old: []setState{st("old", 0, 0, 0, 0)}, want: "new"},
		"none with replicas, no new: latest": {old: []setState{st("a", 0, 0, 0, 0), st("b", 5, 0, 0, 0), st("c", 3, 0, 0, 0)}, want: "b"},
		"no sets":                            {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if s := activeOrLatest(tc.newSet, tc.old); s != nil {
				got = s.name
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOnDeleteTargets(t *testing.T) {
	withActual := func(s setState, actual int32) setState { s.actual = actual; return s }
	cases := map[string]struct {
		replicas int32
		old      []setState
		want     map[string]int32
		wantNew  int32
	}{
		"a template change alone moves nothing":        {replicas: 3, old: []setState{st("old", 0, 3, 3, 0)}, want: map[string]int32{"old": 3}, wantNew: 0},
		"a deleted old Machine moves to the new set":   {replicas: 3, old: []setState{withActual(st("old", 0, 3, 3, 0), 2)}, want: map[string]int32{"old": 2}, wantNew: 1},
		"scaling up adds to the new set":               {replicas: 5, old: []setState{st("old", 0, 3, 3, 0)}, want: map[string]int32{"old": 3}, wantNew: 2},
		"scaling down takes from the oldest set first": {replicas: 2, old: []setState{st("older", 0, 2, 2, 0), st("old", 1, 2, 2, 0)}, want: map[string]int32{"older": 0, "old": 2}, wantNew: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, gotNew := onDeleteTargets(tc.replicas, tc.old, nil)
			if !maps.Equal(got, tc.want) || gotNew != tc.wantNew {
				t.Fatalf("old %v new %d, want %v %d", got, gotNew, tc.want, tc.wantNew)
			}
		})
	}
}

func ref[T any](v T) *T { return &v }

// marked is st with n Machines carrying the delete-machine annotation.
func marked(s setState, n int32) setState { s.marked = n; return s }

func TestScaleTargetsTakesMarkedMachinesFirst(t *testing.T) {
	cases := map[string]struct {
		replicas, surge int32
		sets            []setState
		want            map[string]int32
	}{
		// The cluster-autoscaler marked a Machine of the smaller (new) set and lowered the
		// deployment 3 -> 2 with a rollout paused half-way (old 3, new 1): proportional spreading
		// alone would take the old set's Machine (see the next case).
		"a mark in the smaller set: that set shrinks": {
			replicas: 2, surge: 1,
			sets: []setState{st("old", 0, 3, 3, 4), marked(st("new", 1, 1, 1, 4), 1)},
			want: map[string]int32{"old": 3, "new": 0},
		},
		"without a mark the largest set shrinks": {
			replicas: 2, surge: 1,
			sets: []setState{st("old", 0, 3, 3, 4), st("new", 1, 1, 1, 4)},
			want: map[string]int32{"old": 2, "new": 1},
		},
		"a mark in the old set, which is smaller": {
			replicas: 3, surge: 1,
			sets: []setState{marked(st("old", 0, 2, 2, 5), 1), st("new", 1, 3, 3, 5)},
			want: map[string]int32{"old": 1, "new": 3},
		},
		"marks beyond the decrease are left for later, oldest set first": {
			replicas: 3, surge: 1,
			sets: []setState{marked(st("old", 0, 2, 2, 5), 1), marked(st("new", 1, 3, 3, 5), 2)},
			want: map[string]int32{"old": 1, "new": 3},
		},
		"the rest of a larger decrease is spread in proportion": {
			replicas: 2, surge: 1,
			sets: []setState{marked(st("old", 0, 2, 2, 5), 1), st("new", 1, 3, 3, 5)},
			want: map[string]int32{"old": 1, "new": 2},
		},
		"a mark never takes a set below zero": {
			replicas: 1, surge: 0,
			sets: []setState{marked(st("old", 0, 1, 1, 3), 3), st("new", 1, 2, 2, 3)},
			want: map[string]int32{"old": 0, "new": 1},
		},
		"marks do not change a scale-up": {
			replicas: 8, surge: 2,
			sets: []setState{marked(st("old", 0, 4, 4, 6), 1), st("new", 1, 2, 0, 6)},
			want: map[string]int32{"old": 7, "new": 3},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := scaleTargets(tc.replicas, tc.surge, 0, tc.sets)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("targets %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScaleTargetsAppliesOnce: once the marked Machine's set has shrunk and every set carries the
// new size, computing the scale again changes nothing, although the mark is still there until
// the Machine is gone.
func TestScaleTargetsAppliesOnce(t *testing.T) {
	sets := []setState{marked(st("old", 0, 2, 2, 5), 1), st("new", 1, 3, 3, 5)}
	first := scaleTargets(3, 1, 5, sets)
	for i := range sets {
		sets[i].replicas = first[sets[i].name]
		sets[i].maxReplicas = 4
	}
	if again := scaleTargets(3, 1, 4, sets); !maps.Equal(again, first) {
		t.Fatalf("the scale was applied again: %v after %v", again, first)
	}
}

func TestOnDeleteTargetsTakeMarkedMachinesFirst(t *testing.T) {
	cases := map[string]struct {
		replicas int32
		old      []setState
		newSet   setState
		want     map[string]int32
		wantNew  int32
	}{
		"a mark in an old set: that set shrinks, the new set keeps its Machines": {
			replicas: 2, old: []setState{marked(st("old", 0, 1, 1, 0), 1)}, newSet: st("new", 1, 2, 2, 0),
			want: map[string]int32{"old": 0}, wantNew: 2,
		},
		"without a mark the new set shrinks": {
			replicas: 2, old: []setState{st("old", 0, 1, 1, 0)}, newSet: st("new", 1, 2, 2, 0),
			want: map[string]int32{"old": 1}, wantNew: 1,
		},
		"a mark in the new set: the old sets keep theirs": {
			replicas: 2, old: []setState{st("old", 0, 2, 2, 0)}, newSet: marked(st("new", 1, 1, 1, 0), 1),
			want: map[string]int32{"old": 2}, wantNew: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, gotNew := onDeleteTargets(tc.replicas, tc.old, &tc.newSet)
			if !maps.Equal(got, tc.want) || gotNew != tc.wantNew {
				t.Fatalf("old %v new %d, want %v %d", got, gotNew, tc.want, tc.wantNew)
			}
		})
	}
}
