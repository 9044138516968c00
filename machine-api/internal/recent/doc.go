// Package recent lets a controller read its own writes. After a controller patches an object, the
// watch event that updates its cache arrives a little later, while the next reconcile of the same
// object (triggered by another object's event, a Node's for example) may already be running:
// reading the stale cached copy it would compute the same change again and fail the optimistic
// lock — a wasted request and a backoff, about one per write at scale.
//
// Writes keeps the object each write returned until the cache shows it (or anything newer), and
// Latest returns the written object instead of a cached copy whose resourceVersion one of this
// controller's writes superseded. resourceVersions are only compared for equality, as the API
// conventions ask. The node linker in the nodelink module does the same for its own writes.
package recent
