// Package watch turns a typed function into an informer's event handler, for the dev tools that
// follow objects from a cache of their own (make bench's tracker, the fault matrix's).
package watch

import toolscache "k8s.io/client-go/tools/cache"

// Handler calls f with every object of type T an informer adds, updates or deletes, and whether
// it was deleted. A deletion the informer missed the end of (DeletedFinalStateUnknown, after a
// relist) is reported with the object's last known state. Objects of other types are ignored.
func Handler[T any](f func(obj T, deleted bool)) toolscache.ResourceEventHandlerFuncs {
	call := func(o any, deleted bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if obj, ok := o.(T); ok {
			f(obj, deleted)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { call(o, false) },
		UpdateFunc: func(_, o any) { call(o, false) },
		DeleteFunc: func(o any) { call(o, true) },
	}
}
