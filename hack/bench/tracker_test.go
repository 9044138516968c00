package main

import (
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestTrackerCounts: the running count kept as events arrive is the number of live Machines seen
// Running, whatever the order of events and resets.
func TestTrackerCounts(t *testing.T) {
	tr := &tracker{changed: make(chan struct{}, 1)}
	tr.reset()
	tr.live = map[types.UID]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	machine := func(i int, running bool) *v1beta1.Machine {
		m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{UID: types.UID(rune('a' + i))}}
		if running {
			m.Status.Phase = v1beta1.MachinePhaseRunning
			m.Status.NodeRef = &v1beta1.NodeReference{Name: "n"}
			m.Status.Conditions = []metav1.Condition{{Type: v1beta1.ReadyCondition, Status: metav1.ConditionTrue}}
		}
		return m
	}
	for step := range 2000 {
		switch r := rng.IntN(20); {
		case r == 0:
			tr.reset()
		case r < 4:
			tr.observe(machine(rng.IntN(10), false), true)
		default:
			tr.observe(machine(rng.IntN(10), rng.IntN(2) == 0), false)
		}
		want := 0
		for uid := range tr.live {
			if _, ok := tr.running[uid]; ok {
				want++
			}
		}
		if live, running := tr.counts(); live != len(tr.live) || running != want {
			t.Fatalf("step %d: counts() = %d live, %d running; want %d, %d", step, live, running, len(tr.live), want)
		}
	}
}
