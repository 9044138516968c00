/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink

import (
	"context"
	"sync"

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
}

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

// latest returns what nodelink wrote last when cached is a stale copy of it, and cached
// otherwise.
func (w *recentWrites) latest(cached client.Object) client.Object {
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

// observe forgets a written object once the cache shows it or something newer (obj is the
// object of a watch event), or once it is deleted.
func (w *recentWrites) observe(obj client.Object, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.m[obj.GetUID()]; ok && (deleted || !e.superseded[obj.GetResourceVersion()]) {
		delete(w.m, obj.GetUID())
	}
}

// remember records a write nodelink made (after, based on resourceVersion before) and forgets
// it at once if the cache already shows it: the watch event may have overtaken the write's answer,
// and then no later event would clear the entry.
func (r *reconciler[M]) remember(ctx context.Context, c client.Reader, before string, after, empty client.Object) {
	r.written.record(before, after)
	if err := c.Get(ctx, client.ObjectKeyFromObject(after), empty); err == nil {
		r.written.latest(empty)
	}
}
