package pending

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owner is the object whose reconcile makes writes: a MachineSet for its Machines, a Machine for
// itself.
type Owner interface {
	GetNamespace() string
	GetName() string
	GetUID() types.UID
}

// Writes remembers the writes of this process that the cache does not show yet. Create it with New.
type Writes struct {
	clock   clock.PassiveClock
	timeout time.Duration

	mu        sync.Mutex
	owners    map[types.NamespacedName]*owner
	lastSweep time.Time
}

type owner struct {
	uid     types.UID
	updated time.Time // when the last write was recorded
	objects map[string]*expectation
}

// expectation is what the cache must show about one object written.
type expectation struct {
	appear   bool            // created or adopted: expected to be listed
	gone     bool            // deleted or released: expected not listed, or being deleted
	uid      types.UID       // of the object deleted, when known: an object of that name with another UID is not it
	replaced map[string]bool // resourceVersions this controller's writes replaced
	written  client.Object   // the API server's answer to the last update, for Latest
	checkAt  time.Time       // an unsure create: when to ask the API server whether it was stored
}

// New returns Writes whose expectations about an owner are dropped timeout after its last write.
func New(c clock.PassiveClock, timeout time.Duration) *Writes {
	return &Writes{clock: c, timeout: timeout, owners: map[types.NamespacedName]*owner{}}
}

func keyOf(o Owner) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// entry returns the expectation about name of o, creating it, and marks o's expectations as
// updated now. The caller holds the lock.
func (w *Writes) entry(o Owner, name string) *expectation {
	now := w.clock.Now()
	w.sweep(now)
	key := keyOf(o)
	p := w.owners[key]
	if p == nil || p.uid != o.GetUID() {
		p = &owner{uid: o.GetUID(), objects: map[string]*expectation{}}
		w.owners[key] = p
	}
	p.updated = now
	x := p.objects[name]
	if x == nil {
		x = &expectation{}
		p.objects[name] = x
	}
	return x
}

// sweep drops the owners whose expectations timed out, at most once per timeout: owners nobody
// asks about any more (deleted objects) must not stay in memory. The caller holds the lock.
func (w *Writes) sweep(now time.Time) {
	if now.Sub(w.lastSweep) < w.timeout {
		return
	}
	w.lastSweep = now
	for key, p := range w.owners {
		if !now.Before(p.updated.Add(w.timeout)) {
			delete(w.owners, key)
		}
	}
}

// Created records that o's reconcile creates (or adopts) the object name: it is awaited until the
// cache lists it. Record it before the call, and Forget it when the call is refused.
func (w *Writes) Created(o Owner, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.entry(o, name)
	x.appear, x.gone = true, false
}

// Deleted records that o's reconcile deletes (or releases) the object name with this uid ("" when
// unknown): it is awaited until the cache no longer lists it, or lists it being deleted.
func (w *Writes) Deleted(o Owner, name string, uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.entry(o, name)
	x.gone, x.appear, x.uid = true, false, uid
}

// Updated records that o's reconcile wrote the object name over resourceVersion replaced: a
// cached copy with that version is stale. written, when not nil, is the API server's answer,
// which Latest serves instead of a stale copy.
func (w *Writes) Updated(o Owner, name, replaced string, written client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	x := w.entry(o, name)
	if x.written != nil && x.written.GetResourceVersion() != replaced {
		// Based on someone else's version: the versions replaced before are older than it.
		x.replaced = nil
	}
	if x.replaced == nil {
		x.replaced = map[string]bool{}
	}
	x.replaced[replaced] = true
	if written != nil {
		x.written = written.DeepCopyObject().(client.Object)
	}
}

// Unsure marks the awaited create of name as of unknown outcome: it stays awaited, and
// Outstanding reports it to be checked with the API server once after has passed.
func (w *Writes) Unsure(o Owner, name string, after time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.owners[keyOf(o)]
	if p == nil || p.uid != o.GetUID() || p.objects[name] == nil {
		return
	}
	p.objects[name].checkAt = w.clock.Now().Add(after)
}

// Forget drops what is awaited about name: the write failed, or the API server says the object
// of an unsure create does not exist.
func (w *Writes) Forget(o Owner, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.owners[keyOf(o)]; p != nil && p.uid == o.GetUID() {
		delete(p.objects, name)
	}
}

// Reset drops everything about the owner named key (it is gone).
func (w *Writes) Reset(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owners, key)
}

// Pending is what an owner's reconcile still waits for the cache to show.
type Pending struct {
	Appear  map[string]bool // created or adopted, not listed yet
	Gone    map[string]bool // deleted or released, still listed and not being deleted
	Updated map[string]bool // updated, still cached at a version a write replaced
	// Check are the unsure creates due to be checked with the API server (a subset of Appear).
	Check map[string]bool
	// Deadline is when to look again without an event: when the wait times out, or the next
	// unsure create is due to be checked. Zero when nothing is awaited.
	Deadline time.Time
}

// Len is the number of objects awaited.
func (p Pending) Len() int { return len(p.Appear) + len(p.Gone) + len(p.Updated) }

// Names returns the names of the objects awaited, sorted.
func (p Pending) Names() []string {
	names := slices.Collect(maps.Keys(p.Appear))
	names = slices.AppendSeq(names, maps.Keys(p.Gone))
	names = slices.AppendSeq(names, maps.Keys(p.Updated))
	slices.Sort(names)
	return names
}

// Lookup returns the cached object named name, or false when the cache does not list it.
type Lookup func(name string) (client.Object, bool)

// In is the Lookup of objects cached by name.
func In[T client.Object](cached map[string]T) Lookup {
	return func(name string) (client.Object, bool) {
		o, ok := cached[name]
		return o, ok
	}
}

// Outstanding drops the expectations about o's objects that the cache (looked up by name) meets
// and returns what is still awaited. Once the timeout has passed since o's last write, everything
// is dropped and nothing is awaited.
func (w *Writes) Outstanding(o Owner, cached Lookup) Pending {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := keyOf(o)
	p := w.owners[key]
	if p == nil || p.uid != o.GetUID() {
		delete(w.owners, key)
		return Pending{}
	}
	now := w.clock.Now()
	out := Pending{Deadline: p.updated.Add(w.timeout)}
	if !now.Before(out.Deadline) {
		delete(w.owners, key)
		return Pending{}
	}
	for name, x := range p.objects {
		obj, listed := cached(name)
		if x.met(obj, listed) {
			delete(p.objects, name)
			continue
		}
		switch {
		case x.gone:
			out.Gone = add(out.Gone, name)
		case x.appear:
			out.Appear = add(out.Appear, name)
			if !x.checkAt.IsZero() {
				if !now.Before(x.checkAt) {
					out.Check = add(out.Check, name)
				} else if x.checkAt.Before(out.Deadline) {
					out.Deadline = x.checkAt // come back to check it
				}
			}
		default:
			out.Updated = add(out.Updated, name)
		}
	}
	if len(p.objects) == 0 {
		delete(w.owners, key)
		return Pending{}
	}
	return out
}

// met reports whether the cache, listing obj (or not listing the name), shows the write.
func (x *expectation) met(obj client.Object, listed bool) bool {
	switch {
	case x.gone:
		return !listed || obj.GetDeletionTimestamp() != nil || (x.uid != "" && obj.GetUID() != x.uid)
	case !listed:
		return !x.appear // an object only updated, and deleted since, is not awaited
	default:
		return !x.replaced[obj.GetResourceVersion()]
	}
}

// Wrote records that a reconcile of after wrote after itself over resourceVersion before; after
// is the API server's answer. Latest serves it until the cache shows the write.
func (w *Writes) Wrote(before string, after client.Object) {
	w.Updated(after, "", before, after)
}

// Latest returns the object this controller wrote last when cached is a copy that write (or an
// earlier one since the cache caught up) superseded, and cached otherwise. Once the cache shows
// the write, what was remembered about it is dropped.
func (w *Writes) Latest(cached client.Object) client.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := keyOf(cached)
	p := w.owners[key]
	if p == nil || p.uid != cached.GetUID() {
		return cached
	}
	x := p.objects[""]
	if x == nil || x.written == nil {
		return cached
	}
	if x.met(cached, true) || !w.clock.Now().Before(p.updated.Add(w.timeout)) {
		delete(p.objects, "")
		if len(p.objects) == 0 {
			delete(w.owners, key)
		}
		return cached
	}
	return x.written.DeepCopyObject().(client.Object)
}

// Len is the number of owners with expectations (for tests).
func (w *Writes) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.owners)
}

func add(s map[string]bool, k string) map[string]bool {
	if s == nil {
		s = map[string]bool{}
	}
	s[k] = true
	return s
}
