package consistency

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

const (
	// Recheck is how soon a deferred reconcile runs again while its cache does not show a write:
	// a cache is normally milliseconds behind, and a write's own event does not always bring the
	// request back (predicates filter, say, a controller's own status writes).
	Recheck = 100 * time.Millisecond
	// DefaultTimeout is how long after a request's last write its reconciles wait for the cache
	// before it wins again: the fallback for a lost watch event.
	DefaultTimeout = 5 * time.Minute
	// DefaultUnsureCreateCheck is how long after a create of unknown outcome the guard asks the
	// API server whether the object exists: longer than the API server's request timeout (1
	// minute by default), after which a create still in flight has been stored or dropped.
	DefaultUnsureCreateCheck = 70 * time.Second
)

// Options configure a Guard.
type Options struct {
	// Controller names the controller in the metric: a fixed name, never one per object (every
	// node linker of a process is "nodelink").
	Controller string
	// Clock is the time source of the timeouts; default the real clock.
	Clock clock.PassiveClock
	// Timeout is DefaultTimeout when 0.
	Timeout time.Duration
	// UnsureCreateCheck is DefaultUnsureCreateCheck when 0.
	UnsureCreateCheck time.Duration
}

// Guard remembers, per request, what one controller's reconciles wrote that the cache does not
// show yet. Build it with New; wrap the controller's reconciler with Reconciler and its client
// with NewClient.
type Guard struct {
	opts Options

	mu        sync.Mutex
	requests  map[types.NamespacedName]*request
	lastSweep time.Time
}

// request is what the reconciles of one request wrote.
type request struct {
	last   time.Time // when the last write was recorded
	writes map[objectRef]written
}

// objectRef names a written object.
type objectRef struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
}

func (r objectRef) String() string { return r.gvk.Kind + " " + r.key.String() }

// New returns a Guard.
func New(opts Options) *Guard {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.UnsureCreateCheck <= 0 {
		opts.UnsureCreateCheck = DefaultUnsureCreateCheck
	}
	return &Guard{opts: opts, requests: map[types.NamespacedName]*request{}}
}

// record remembers w, a write the reconcile of key made to the object ref; a create is due to
// be checked with the API server UnsureCreateCheck from now if the cache does not list it by then.
func (g *Guard) record(key types.NamespacedName, ref objectRef, w written) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.opts.Clock.Now()
	g.sweep(now)
	if w.created {
		w.checkAt = now.Add(g.opts.UnsureCreateCheck)
	}
	req := g.requests[key]
	if req == nil {
		req = &request{writes: map[objectRef]written{}}
		g.requests[key] = req
	}
	req.last = now
	if prev, ok := req.writes[ref]; ok {
		w = prev.then(w)
	}
	req.writes[ref] = w
}

// sweep drops the requests whose writes timed out, at most once per timeout: requests nobody
// reconciles any more (deleted objects) must not stay in memory. The caller holds the lock.
func (g *Guard) sweep(now time.Time) {
	if now.Sub(g.lastSweep) < g.opts.Timeout {
		return
	}
	g.lastSweep = now
	for key, req := range g.requests {
		if !now.Before(req.last.Add(g.opts.Timeout)) {
			delete(g.requests, key)
		}
	}
}

// Wait returns how long the reconcile of key must wait before it may act: 0 when its cache shows
// everything the earlier reconciles of key wrote (or the wait timed out), else when to look
// again. Writes the cache shows are forgotten. An unsure create due to be checked is looked up on
// the API server; an error of a read is returned.
func (g *Guard) Wait(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	o, err := g.wait(ctx, key)
	return o.after, err
}

// outcome is what wait found.
type outcome struct {
	after    time.Duration // 0: act now
	awaited  int           // writes not shown yet
	first    objectRef     // one of them
	timedOut int           // writes given up on (the cache wins)
}

func (g *Guard) wait(ctx context.Context, key types.NamespacedName) (outcome, error) {
	now := g.opts.Clock.Now()
	writes, deadline, timedOut := g.pending(key, now)
	if len(writes) == 0 {
		return outcome{timedOut: timedOut}, nil
	}
	var (
		o        outcome
		next     time.Time
		shown    []objectRef
		resolved = map[objectRef]written{}
	)
	for ref, w := range writes {
		cached, err := w.at.cached(ctx, ref)
		if err != nil {
			return outcome{}, err
		}
		if w.shownBy(cached) {
			shown = append(shown, ref)
			continue
		}
		if w.unsure && (now.Before(w.checkAt) || w.at.api == nil) {
			// Its object's event brings the request back sooner if it was stored.
			o.awaited, o.first = o.awaited+1, ref
			if now.Before(w.checkAt) {
				next = earliest(next, w.checkAt)
			} else {
				next = earliest(next, deadline) // no API reader to ask
			}
			continue
		}
		if w.created && !w.checkAt.IsZero() && !now.Before(w.checkAt) && w.at.api != nil {
			stored, err := w.at.stored(ctx, ref)
			if err != nil {
				return outcome{}, err
			}
			if stored == nil {
				// Never stored (an unsure create), or deleted since: nothing to wait for.
				shown = append(shown, ref)
				continue
			}
			w.unsure, w.checkAt = false, time.Time{}
			if w.rv == "" {
				w.rv = stored.GetResourceVersion()
			}
			resolved[ref] = w
		}
		o.awaited, o.first = o.awaited+1, ref
		next = earliest(next, now.Add(Recheck))
	}
	g.settle(key, shown, resolved)
	if o.awaited == 0 {
		return o, nil
	}
	if next.After(deadline) {
		next = deadline
	}
	o.after = next.Sub(now)
	return o, nil
}

// pending returns a copy of what the reconciles of key wrote and when the wait for it times out;
// nothing, and the number of writes dropped, once it has timed out.
func (g *Guard) pending(key types.NamespacedName, now time.Time) (map[objectRef]written, time.Time, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	req := g.requests[key]
	if req == nil {
		return nil, time.Time{}, 0
	}
	deadline := req.last.Add(g.opts.Timeout)
	if !now.Before(deadline) {
		delete(g.requests, key)
		return nil, time.Time{}, len(req.writes)
	}
	out := make(map[objectRef]written, len(req.writes))
	for ref, w := range req.writes {
		out[ref] = w
	}
	return out, deadline, 0
}

// settle forgets the writes of key the cache shows, and records what the API server said about
// unsure creates it stored.
func (g *Guard) settle(key types.NamespacedName, shown []objectRef, resolved map[objectRef]written) {
	g.mu.Lock()
	defer g.mu.Unlock()
	req := g.requests[key]
	if req == nil {
		return
	}
	for _, ref := range shown {
		delete(req.writes, ref)
	}
	for ref, w := range resolved {
		req.writes[ref] = w
	}
	if len(req.writes) == 0 {
		delete(g.requests, key)
	}
}

// Len is the number of requests with writes remembered (for tests).
func (g *Guard) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
