// Package write holds the one write protocol of the controllers of machine-api and cluster-api,
// and its conflict policy. It is exported so that cluster-api (which builds on machine-api) writes
// the way machine-api does instead of keeping a copy.
//
// # Status: server-side apply of the fields a controller owns
//
// Every controller writes the status of our kinds (Machine, MachineSet, MachineDeployment,
// MachineHealthCheck, Cluster) with ApplyStatus, or Status, which returns the stored object: one
// server-side apply, through the apply configurations controller-gen generates into
// <module>/applyconfiguration, holding exactly the fields the controller owns, under its own field
// manager (a named constant in its package), forcing ownership. A controller that owns the whole
// status of its kind builds that apply configuration with WholeStatus, so that no field of the
// status is left out. The API server merges what
// several controllers own on one object: the conditions list merges by type, so the machine
// controller's Ready, the node linker's NodeLinked, the health check's HealthCheckSucceeded and
// cluster-manager's WorkloadNodeDrained on one Machine never overwrite each other, and none of
// those writes carries a resourceVersion: they cannot conflict. A field a controller stops sending
// is removed. Nothing is written when the computed status equals the one read. The object the API
// server answers with is returned. Every controller writes through its guarded client (package
// machineapi.dev/nodelink/consistency), so the next reconcile of the object runs only once the
// cache shows the write: a status is never computed from an older one of the same controller.
//
// Two preconditions remain, on purpose: the UID (a status is never applied to an object re-created
// under the same name), and, for the health check's Remediating mark written before it deletes a
// Machine, the resourceVersion the Machine was judged at (a Machine that changed is judged again
// before anything is deleted). Both fail with a conflict, handled as below.
//
// # Spec and metadata: merge patch
//
// Finalizers, lifecycle hooks, adoption and release (owner references and labels), a set's
// replicas, a deployment's revision and a Cluster's worker pool MachineDeployments are written with
// a JSON merge patch guarded by the resourceVersion the change was computed from
// (client.MergeFromWithOptimisticLock): those lists and values are shared with other writers, and
// a merge patch replaces a list whole. Objects whose schema we do not own (Nodes: cordon in
// machineapi.dev/drain, labels and taints in machineapi.dev/nodelink) are written the same way.
// Writes that replace a value the controller alone decides (spec.providerID, a set's template
// metadata on its Machines) go without the lock.
//
// # Conflicts
//
// A conflict on one of those guarded writes is expected: the cache had not caught up with the
// object, or another writer changed it. It is no error: RequeueOnConflict turns it into a requeue
// after ConflictRetry, which reads the object again, without an error log, a stack trace or the
// error backoff. Anything else a write returns is an error, returned (and logged) as usual.
//
// Start reading at ApplyStatus and RequeueOnConflict in write.go.
package write
