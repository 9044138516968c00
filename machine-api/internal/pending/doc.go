// Package pending lets a controller read its own writes: it remembers the writes this process
// made that its cache does not show yet, so that no decision is taken twice from a stale cache.
//
// A controller reads from its manager's cache, which learns of each write a little after the API
// server answered it. Until then a reconcile would see the world as it was before the write: a
// MachineSet would count the same gap twice and overshoot, a MachineDeployment would scale a set
// twice for one change, a health check would start a remediation beyond maxInFlight, and any
// controller would compute a status from its own older one. Writes is the one answer to all of
// them. It records, per owner (the object whose reconcile made the write), what the cache must
// show about each object written:
//
//   - created (or adopted): the object is listed;
//   - deleted (or released): the object is not listed, is being deleted, or has another UID;
//   - updated: the cached copy's resourceVersion is none of those this controller's writes
//     replaced since the cache last caught up (resourceVersions are compared for equality only,
//     as the API conventions ask).
//
// Outstanding tells an owner's reconcile what is still awaited, dropping what the cache shows;
// while anything is, the controller does not act on the counts it affects. Latest serves a
// controller's writes to an object itself (its status, its finalizer): it returns the object the
// API server answered with instead of a cached copy that write superseded.
//
// A create whose outcome is unknown (the connection broke, the API server timed out) stays
// awaited: Unsure schedules a check with the API server, and only the check's answer that the
// object does not exist, or Forget after a refusal, stops the wait.
//
// Expectations live in memory. A restarted process starts with none once its cache has synced,
// which already shows every earlier write. Every owner's expectations are dropped after the
// timeout given to New (counted from its last recorded write), the fallback for a lost watch
// event; a re-created owner (same name, new UID) inherits nothing.
package pending
