package nodelink

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recentWrites lets a reconcile read its own writes. After nodelink patches a Node or a machine,
// the watch event that updates the cache arrives a little later, and the write itself triggers
// the next reconcile of the same machine (through the other object's event): reading the stale
// cached copy, that reconcile would write again and fail the optimistic lock — one wasted
// request and a backoff per link. So the object each write returned is kept until the cache
// shows it (or anything newer), and reads of an object whose cached resourceVersion is one this
// linker's writes superseded return the written object instead. resourceVersions are only
// compared for equality.
type recentWrites struct {
	mu sync.Mutex
	m  map[types.UID]written
}

type written struct {
	// superseded are the resourceVersions nodelink's writes were based on since the cache last
	// caught up: a cached copy with one of them is stale.
	superseded map[string]bool
	obj        client.Object
	// shows, for a write without a resourceVersion precondition (a server-side apply of
	// nodelink's own fields), replaces superseded: other controllers' writes may come between
	// the version nodelink read and its own, so a cached copy is stale when it does not show
	// nodelink's fields as written — nobody else writes them, so every later version does.
	shows func(cached client.Object) bool
	// at is when an applied write was recorded: after appliedTimeout the cache wins again even
	// if it does not show the write (someone removed nodelink's fields by hand).
	at time.Time
}

// appliedTimeout bounds how long an applied write is served instead of a cached copy that does
// not show it.
const appliedTimeout = time.Minute

// record remembers after, the answer to a write based on resourceVersion before.
func (w *recentWrites) record(before string, after client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]written{}
	}
	e, ok := w.m[after.GetUID()]
	if !ok || e.obj.GetResourceVersion() != before {
		e = written{superseded: map[string]bool{}}
	}
	e.superseded[before] = true
	e.obj = after.DeepCopyObject().(client.Object)
	w.m[after.GetUID()] = e
}

// recordApplied remembers after, the answer to a write without precondition (see written.shows).
func (w *recentWrites) recordApplied(after client.Object, shows func(cached client.Object) bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]written{}
	}
	w.m[after.GetUID()] = written{obj: after.DeepCopyObject().(client.Object), shows: shows, at: now}
}

// latest returns what nodelink wrote last when cached is a stale copy of it, and cached
// otherwise.
func (w *recentWrites) latest(cached client.Object, now time.Time) client.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[cached.GetUID()]
	if !ok {
		return cached
	}
	if e.current(cached, now) {
		delete(w.m, cached.GetUID())
		return cached
	}
	return e.obj.DeepCopyObject().(client.Object)
}

// current reports whether cached shows the write or something newer.
func (e written) current(cached client.Object, now time.Time) bool {
	if e.shows != nil {
		return e.shows(cached) || now.Sub(e.at) >= appliedTimeout
	}
	return !e.superseded[cached.GetResourceVersion()]
}

// observe forgets a written object once the cache shows it or something newer (obj is the
// object of a watch event), or once it is deleted.
func (w *recentWrites) observe(obj client.Object, deleted bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.m[obj.GetUID()]; ok && (deleted || e.current(obj, now)) {
		delete(w.m, obj.GetUID())
	}
}

// remember records a write nodelink made (after, based on resourceVersion before) and forgets
// it at once if the cache already shows it: the watch event may have overtaken the write's answer,
// and then no later event would clear the entry.
func (r *reconciler[M]) remember(ctx context.Context, c client.Reader, before string, after, empty client.Object) {
	r.written.record(before, after)
	r.forgetIfCached(ctx, c, after, empty)
}

// rememberApplied records m as nodelink applied it (see written.shows), and forgets it at once if
// the cache already shows it.
func (r *reconciler[M]) rememberApplied(ctx context.Context, m M) {
	ref, cond := r.adapter.NodeRef(m), r.adapter.LinkCondition(m)
	shows := func(cached client.Object) bool {
		c, ok := cached.(M)
		return ok && equality.Semantic.DeepEqual(r.adapter.NodeRef(c), ref) && equality.Semantic.DeepEqual(r.adapter.LinkCondition(c), cond)
	}
	r.written.recordApplied(m, shows, r.opts.Clock.Now())
	r.forgetIfCached(ctx, r.machines.GetCache(), m, r.adapter.New())
}

func (r *reconciler[M]) forgetIfCached(ctx context.Context, c client.Reader, after, empty client.Object) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(after), empty); err == nil {
		r.written.latest(empty, r.opts.Clock.Now())
	}
}
