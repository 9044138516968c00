package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"machineapi.dev/hack/tools/watch"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// tracker records, from a watch, when each Machine appeared, reached each milestone on its way to
// Running (with a nodeRef and a Ready Node), started deleting and disappeared, as this process saw
// it.
type tracker struct {
	mu       sync.Mutex
	seen     map[types.UID]time.Time
	reached  map[types.UID]*[len(milestones)]time.Time
	running  map[types.UID]time.Time
	deleting map[types.UID]time.Time
	gone     map[types.UID]time.Time
	live     map[types.UID]bool
	// liveRunning counts the live Machines in running, kept as events arrive: counting them on
	// every wake-up costs O(N) per event, which at 5000 Machines took the benchmark seconds of CPU
	// that the system it measures needed.
	liveRunning int
	changed     chan struct{}
}

// milestone is a point on a Machine's way to Running: reached the first time the watch shows a
// Machine for which it holds. Each implies the ones before it, so a Machine that skips one (seen
// first already linked) reaches it at the same moment as the next.
type milestone struct {
	name    string
	reached func(m *v1beta1.Machine) bool
}

// milestones, in order: the machine controller took the Machine up (phase Provisioning, or later);
// the instance exists (spec.providerID recorded); the Machine is linked to its Node
// (status.nodeRef); Running.
var milestones = [...]milestone{
	{"provisioning", func(m *v1beta1.Machine) bool {
		return m.Status.Phase != "" && m.Status.Phase != v1beta1.MachinePhasePending
	}},
	{"provisioned", func(m *v1beta1.Machine) bool { return m.Spec.ProviderID != "" }},
	{"linked", func(m *v1beta1.Machine) bool { return m.Status.NodeRef != nil }},
	{"running", isRunning},
}

func newTracker(ctx context.Context, c cache.Cache) (*tracker, error) {
	t := &tracker{seen: map[types.UID]time.Time{}, reached: map[types.UID]*[len(milestones)]time.Time{}, running: map[types.UID]time.Time{}, deleting: map[types.UID]time.Time{},
		gone: map[types.UID]time.Time{}, live: map[types.UID]bool{}, changed: make(chan struct{}, 1)}
	inf, err := c.GetInformer(ctx, &v1beta1.Machine{})
	if err != nil {
		return nil, err
	}
	_, err = inf.AddEventHandler(watch.Handler(t.observe))
	return t, err
}

func (t *tracker) observe(m *v1beta1.Machine, deleted bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[m.UID]; !ok {
		t.seen[m.UID] = now
	}
	_, wasRunning := t.running[m.UID]
	switch {
	case deleted:
		t.gone[m.UID] = now
		if t.live[m.UID] && wasRunning {
			t.liveRunning--
		}
		delete(t.live, m.UID)
	case !t.live[m.UID]:
		t.live[m.UID] = true
		if wasRunning {
			t.liveRunning++
		}
	}
	if !wasRunning && isRunning(m) {
		t.running[m.UID] = now
		if t.live[m.UID] {
			t.liveRunning++
		}
	}
	t.reach(m, now)
	if _, ok := t.deleting[m.UID]; !ok && m.DeletionTimestamp != nil {
		t.deleting[m.UID] = now
	}
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// reach records the milestones m reached now: the last one that holds, and every earlier one
// not reached yet.
func (t *tracker) reach(m *v1beta1.Machine, now time.Time) {
	r := t.reached[m.UID]
	if r == nil {
		r = &[len(milestones)]time.Time{}
		t.reached[m.UID] = r
	}
	for i := len(milestones) - 1; i >= 0; i-- {
		if !milestones[i].reached(m) {
			continue
		}
		for j := i; j >= 0 && r[j].IsZero(); j-- {
			r[j] = now
		}
		return
	}
}

// isRunning: phase Running, linked, and the machine controller reports the Node Ready.
func isRunning(m *v1beta1.Machine) bool {
	return m.Status.Phase == v1beta1.MachinePhaseRunning && m.Status.NodeRef != nil &&
		meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.ReadyCondition)
}

// reset forgets everything seen so far (between steps).
func (t *tracker) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen, t.running, t.deleting, t.gone = map[types.UID]time.Time{}, map[types.UID]time.Time{}, map[types.UID]time.Time{}, map[types.UID]time.Time{}
	t.reached = map[types.UID]*[len(milestones)]time.Time{}
	t.liveRunning = 0
}

// counts returns the live machines and how many of them are running.
func (t *tracker) counts() (live, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live), t.liveRunning
}

// waitUntil blocks until cond holds, reporting progress every few seconds.
func (t *tracker) waitUntil(ctx context.Context, what string, timeout time.Duration, cond func(live, running int) bool) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		live, running := t.counts()
		if cond(live, running) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%s: not done after %s (%d machines, %d running)", what, timeout, live, running)
		case <-tick.C:
			logf("  %s: %d machines, %d running", what, live, running)
		case <-t.changed:
		}
	}
}

// timeToRunning returns the p50 and p99 of (running - seen) over the machines seen since reset.
func (t *tracker) timeToRunning() (p50, p99 time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ds []time.Duration
	for uid, r := range t.running {
		if s, ok := t.seen[uid]; ok {
			ds = append(ds, r.Sub(s))
		}
	}
	return percentile(ds, 50), percentile(ds, 99)
}

// phaseResult is how long Machines spent in one phase of the scale-up: from one milestone (or
// their creation) to the next.
type phaseResult struct {
	Name       string  `json:"name"`
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
}

// phases returns the p50 and p99 of the time the Machines that reached Running since reset spent
// between consecutive milestones, starting from when the watch first saw them.
func (t *tracker) phases() []phaseResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	spans := make([][]time.Duration, len(milestones))
	for uid, r := range t.reached {
		seen, ok := t.seen[uid]
		if !ok || r[len(r)-1].IsZero() {
			continue
		}
		prev := seen
		for i, at := range r {
			spans[i] = append(spans[i], at.Sub(prev))
			prev = at
		}
	}
	out := make([]phaseResult, len(milestones))
	from := "created"
	for i, m := range milestones {
		out[i] = phaseResult{Name: from + " -> " + m.name, P50Seconds: percentile(spans[i], 50).Seconds(), P99Seconds: percentile(spans[i], 99).Seconds()}
		from = m.name
	}
	return out
}

// lastSeen returns when the watch first saw the newest Machine seen since reset.
func (t *tracker) lastSeen() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, s := range t.seen {
		if s.After(last) {
			last = s
		}
	}
	return last
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := (len(ds)*p + 99) / 100
	if i > 0 {
		i--
	}
	return ds[min(i, len(ds)-1)]
}

// deletionStartedAt returns when this process saw the machine start deleting.
func (t *tracker) deletionStartedAt(uid types.UID) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts, ok := t.deleting[uid]
	return ts, ok
}
