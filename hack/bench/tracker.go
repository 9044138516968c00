package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// tracker records, from a watch, when each Machine appeared, became Running (with a nodeRef and
// a Ready Node), started deleting and disappeared, as this process saw it.
type tracker struct {
	mu       sync.Mutex
	seen     map[types.UID]time.Time
	running  map[types.UID]time.Time
	deleting map[types.UID]time.Time
	gone     map[types.UID]time.Time
	live     map[types.UID]bool
	changed  chan struct{}
}

func newTracker(ctx context.Context, c cache.Cache) (*tracker, error) {
	t := &tracker{seen: map[types.UID]time.Time{}, running: map[types.UID]time.Time{}, deleting: map[types.UID]time.Time{},
		gone: map[types.UID]time.Time{}, live: map[types.UID]bool{}, changed: make(chan struct{}, 1)}
	inf, err := c.GetInformer(ctx, &v1beta1.Machine{})
	if err != nil {
		return nil, err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.observe(o, false) },
		UpdateFunc: func(_, o any) { t.observe(o, false) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			t.observe(o, true)
		},
	})
	return t, err
}

func (t *tracker) observe(o any, deleted bool) {
	m, ok := o.(*v1beta1.Machine)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[m.UID]; !ok {
		t.seen[m.UID] = now
	}
	if deleted {
		t.gone[m.UID] = now
		delete(t.live, m.UID)
	} else {
		t.live[m.UID] = true
	}
	if _, ok := t.running[m.UID]; !ok && isRunning(m) {
		t.running[m.UID] = now
	}
	if _, ok := t.deleting[m.UID]; !ok && m.DeletionTimestamp != nil {
		t.deleting[m.UID] = now
	}
	select {
	case t.changed <- struct{}{}:
	default:
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
}

// counts returns the live machines and how many of them are running.
func (t *tracker) counts() (live, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.live {
		if _, ok := t.running[uid]; ok {
			running++
		}
	}
	return len(t.live), running
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
