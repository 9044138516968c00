// Package consistency keeps a controller from acting on a cache that does not show its own writes
// yet: the one read-your-writes guard of every controller in machine-api, cluster-api and
// nodelink (Kubernetes 1.36's "staleness mitigation for controllers", done the same way for
// every controller).
//
// A controller reads from its manager's cache, which learns of each write a little after the API
// server answered it. A reconcile that ran before then would act on the world as it was: a
// MachineSet would count the same gap twice and overshoot, a MachineDeployment would scale a set
// twice for one change, a health check would start remediations beyond maxInFlight, a node linker
// would patch a Node from a copy its own patch superseded, and any controller would compute a
// status from its own older one.
//
// # What it owns
//
// A [Guard] per controller remembers, per reconciled object (the request's key), what that
// object's reconciles wrote and the cache does not show yet; [Guard.Reconciler] wraps the
// controller's reconciler so that a reconcile whose cache is older than those writes is requeued
// after [Recheck] instead of run (logged at V(1), counted in machineapi_consistency_requeues_total);
// [NewClient] wraps the controller's client so that every write made through it during a guarded
// reconcile is recorded for that reconcile's request (found in the context), with no call in the
// controller. A write made outside a guarded reconcile is not recorded. What a write leaves the
// cache to show:
//
//   - created, updated, patched or applied (the object itself or its status): the cached copy's
//     resourceVersion is at least the one the API server answered (resourceVersions are
//     comparable since Kubernetes 1.35); an object only updated (or applied: create objects with
//     Create) may be gone since, a created one must be listed;
//   - deleted (or NotFound when deleted): the cache does not hold the object, holds it being
//     deleted, or holds another object (another UID) under its name;
//   - created with an unknown outcome (the connection broke, the API server timed out: anything
//     but a refusal, see [Refused]): the object is listed; once UnsureCreateCheck has passed
//     (default [DefaultUnsureCreateCheck], longer than the API server's request timeout) the guard
//     asks the API server, and only its answer that the object does not exist ends the wait. A
//     create that did succeed is checked the same way if the cache still does not list it then
//     (someone deleted the object before the cache saw it).
//
// # Invariants
//
//   - A request is deferred while any write of its earlier reconciles is not shown, and at most
//     Timeout (default [DefaultTimeout]) after the last of them: then the cache wins again (the
//     fallback for a lost watch event, logged).
//   - Only what the controller reads from the cache is awaited: writes of kinds listed
//     ClientOptions.Uncached, of PartialObjectMetadata, and of unstructured objects (unless
//     ClientOptions.Unstructured) are not recorded. Write through a guarded client only objects
//     its cache holds (a kind it watches, within its namespaces and label selectors): the guard
//     reads each recorded object back from that cache.
//   - Memory only. A restarted process starts with nothing awaited once its cache has synced,
//     which already shows every earlier write; a re-created object (a new UID, a higher
//     resourceVersion) shows every write to the old one.
//
// # Requeues
//
// [Recheck] (100ms) while a write is not shown; the time until an unsure create is due to be
// checked when only such creates are awaited (their object's event, when it appears, brings the
// request back sooner); never later than the timeout.
//
// Start reading at [Guard.Wait] (guard.go); written.go holds the pure decision of whether a cached
// copy shows a write, client.go the client.
package consistency
