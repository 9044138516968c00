package sim

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestReclaim protects the simulated spot reclaim: nothing is announced before the notice, the
// notice carries the reclaim time, the Machine is woken when the notice starts and when the
// reclaim comes, and bad knobs are errors.
func TestReclaim(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := testclock.NewFakeClock(t0)
	p, err := New(Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	woken := make(chan string, 10)
	p.NotifyInterruptions(func(ns, name string) { woken <- ns + "/" + name })
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "u", Annotations: map[string]string{
		ReclaimAtAnnotation: t0.Add(10 * time.Minute).Format(time.RFC3339), ReclaimNoticeAnnotation: "3m",
	}}}
	ctx := context.Background()

	if i, err := p.Interruption(ctx, m); err != nil || i != nil {
		t.Fatalf("before the notice: %+v, %v; want nothing", i, err)
	}
	clock.Step(7*time.Minute + time.Second)
	select {
	case who := <-woken:
		if who != "ns/m" {
			t.Errorf("woke %s", who)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Machine was not woken when the notice started")
	}
	i, err := p.Interruption(ctx, m)
	if err != nil || i == nil || !i.Deadline.Equal(t0.Add(10*time.Minute)) || i.Reason != "SpotReclaim" {
		t.Fatalf("within the notice: %+v, %v", i, err)
	}
	if p.reclaimed(m) {
		t.Error("reclaimed before its time")
	}
	clock.Step(3 * time.Minute)
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("the Machine was not woken when the reclaim came")
	}
	if !p.reclaimed(m) {
		t.Error("not reclaimed at its time")
	}

	for _, bad := range []map[string]string{{ReclaimAtAnnotation: "soon"}, {ReclaimAtAnnotation: t0.Format(time.RFC3339), ReclaimNoticeAnnotation: "-1m"}} {
		if _, err := p.Interruption(ctx, &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: bad}}); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
