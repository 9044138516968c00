package consistency

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// written is what one object's last write by a request's reconciles leaves the cache to show.
type written struct {
	// rv is the resourceVersion the API server answered a create or an update with; "" for a
	// delete and an unsure create.
	rv string
	// created: the object must be listed (an object only updated may have been deleted since);
	// true for an unsure create too.
	created bool
	// deleted: the object must be gone, deleting, or another object (uid) under its name.
	deleted bool
	// uid is the deleted object's UID, "" when unknown.
	uid types.UID
	// unsure: a create whose outcome is unknown.
	unsure bool
	// checkAt, for a create the cache does not list yet, is when to ask the API server whether the
	// object exists (an unsure create may not, a sure one may have been deleted since); zero once
	// asked.
	checkAt time.Time
	// at is where the object was written (its cache and API server).
	at *view
}

// then returns what the cache must show after w and then next, a later write of the same object.
func (w written) then(next written) written {
	if !next.deleted && next.rv != "" && w.created && !w.deleted {
		next.created, next.checkAt = true, w.checkAt // updated after it was created: still to be listed
	}
	return next
}

// shownBy reports whether a cache holding cached (nil when it does not hold the object) shows w.
// A create is shown only by its object.
func (w *written) shownBy(cached client.Object) bool {
	switch {
	case w.deleted:
		return cached == nil || cached.GetDeletionTimestamp() != nil || w.uid != "" && cached.GetUID() != w.uid
	case cached == nil:
		return !w.created
	default:
		return atLeast(cached.GetResourceVersion(), w.rv)
	}
}

// atLeast reports whether resourceVersion cached is rv or later. An unsure create has no rv: any
// copy shows it. Versions that do not compare (not from an API server) count as shown: the
// guard never waits for what it cannot judge.
func atLeast(cached, rv string) bool {
	if rv == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(cached, rv)
	return err != nil || c >= 0
}
