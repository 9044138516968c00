package machinehealthcheck

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// BenchmarkEvaluate5000 is one evaluation pass of a health check over 5000 Machines, as a
// reconcile runs it on what the cache returned (in no particular order): 4900 healthy, 50 NotReady
// still within their timeout (suspect), 40 without a Node yet and 10 unhealthy.
//
//	go test ./internal/controller/machinehealthcheck -run '^$' -bench Evaluate5000 -benchmem
func BenchmarkEvaluate5000(b *testing.B) {
	spec := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{
			{Type: "Ready", Status: "False", TimeoutSeconds: 300},
			{Type: "Ready", Status: "Unknown", TimeoutSeconds: 300},
		},
		MaxInFlight: ptrIntStr("10%"),
	}
	targets := make([]target, 0, 5000)
	for i := range 5000 {
		name := fmt.Sprintf("m-%05d", i)
		switch {
		case i < 50:
			targets = append(targets, healthyTarget(name, notReadyFor(time.Minute)))
		case i < 90:
			targets = append(targets, healthyTarget(name, noNodeProvisionedAgo(time.Minute)))
		case i < 100:
			targets = append(targets, healthyTarget(name, notReadyFor(time.Hour)))
		default:
			targets = append(targets, healthyTarget(name))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	work := make([]target, len(targets))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, targets)
		ev, err := evaluate(&spec, work, false, time.Time{}, now)
		if err != nil || ev.started != 10 || ev.healthy != 4900 || ev.suspect != 50 {
			b.Fatalf("evaluate: %v started %d healthy %d", err, ev.started, ev.healthy)
		}
	}
}

// BenchmarkPass5000 is the whole pure part of a reconcile over 5000 Machines whose conditions are
// already up to date: the evaluation plus deciding which Machines need a write (none do).
//
//	go test ./internal/controller/machinehealthcheck -run '^$' -bench Pass5000 -benchmem
func BenchmarkPass5000(b *testing.B) {
	spec := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{{Type: "Ready", Status: "False", TimeoutSeconds: 300}},
	}
	mhc := &v1beta1.MachineHealthCheck{Spec: spec}
	targets := make([]target, 5000)
	for i := range targets {
		targets[i] = healthyTarget(fmt.Sprintf("m-%05d", i))
	}
	ev, err := evaluate(&spec, targets, false, time.Time{}, now)
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range jobsOf(ev, remedyOf(mhc), false) { // bring every Machine's condition up to date
		j.o.target.machine.Status.Conditions = []metav1.Condition{j.verdict.health}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	work := make([]target, len(targets))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, targets)
		ev, err := evaluate(&spec, work, false, time.Time{}, now)
		if err != nil {
			b.Fatal(err)
		}
		if jobs := jobsOf(ev, remedyOf(mhc), false); len(jobs) != 0 {
			b.Fatalf("%d jobs, want none", len(jobs))
		}
	}
}
