package recent

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writes remembers a controller's recent writes, by object UID. The zero value is ready to use.
type Writes struct {
	mu sync.Mutex
	m  map[types.UID]entry
}

type entry struct {
	// superseded are the resourceVersions this controller's writes were based on since the cache
	// last caught up: a cached copy with one of them is stale.
	superseded map[string]bool
	obj        client.Object
}

// Record remembers after, the API server's answer to a write based on resourceVersion before.
func (w *Writes) Record(before string, after client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]entry{}
	}
	e, ok := w.m[after.GetUID()]
	if !ok || e.obj.GetResourceVersion() != before {
		e = entry{superseded: map[string]bool{}}
	}
	e.superseded[before] = true
	e.obj = after.DeepCopyObject().(client.Object)
	w.m[after.GetUID()] = e
}

// Latest returns the object this controller wrote last when cached is a stale copy of it, and
// cached otherwise (then the entry is forgotten: the cache has caught up).
func (w *Writes) Latest(cached client.Object) client.Object {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[cached.GetUID()]
	if !ok {
		return cached
	}
	if !e.superseded[cached.GetResourceVersion()] {
		delete(w.m, cached.GetUID())
		return cached
	}
	return e.obj.DeepCopyObject().(client.Object)
}

// Forget drops what is remembered about an object, for example once it is deleted.
func (w *Writes) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, uid)
}

// Len is the number of objects remembered (for tests and metrics).
func (w *Writes) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
