// Package machine is the Machine controller: it provisions a Machine's instance through the
// provider, follows its Node to Running, and on deletion drains and removes everything in order.
//
// # Create path
//
// finalizer → phase Provisioning, persisted before the first Create → Exists before every Create
// (so a stale cache or a crash between Create and the status write never makes a second instance)
// → Create (or Update when the instance exists) → spec.providerID persisted, phase Provisioned →
// Running once the node linker has set status.nodeRef and the Node is Ready. An instance that
// disappears after it was provisioned turns the Machine Failed (InstanceMissing); it is never
// re-created here — replacing machines is the job of sets and health checks. An invalid
// configuration turns it Failed (InvalidConfiguration) until its spec changes.
//
// # Delete path
//
// An ordered pipeline that stops at the first step still waiting; the Deleting condition's reason
// names that step and its message what it waits for: WaitingForPreDrainHooks → DrainingNode (cordon
// and evict with the drain module; skipped with the exclude-node-draining annotation, without a
// Node, or after spec.deletion.nodeDrainTimeoutSeconds; the drain module takes a fast path on an
// unreachable Node) → WaitingForVolumeDetach (bounded by nodeVolumeDetachTimeoutSeconds) →
// WaitingForPreTerminateHooks → DeletingInstance (provider Delete, then Exists until false) →
// DeletingNode (bounded by nodeDeletionTimeoutSeconds, default 10s) → finalizer removed. The start
// of each bounded step is recorded in status.deletion, so timeouts survive restarts.
//
// # What it writes
//
// Status is computed from what a reconcile observed (status.go, pure functions) and written once per
// reconcile by one server-side apply (field manager machine-controller) of only the fields it owns,
// so that it never conflicts with, nor overwrites, the node linker's and the health check's
// conditions, which the API server merges by type. It owns phase, addresses, providerStatus,
// versions, provisionedTime, failureReason/Message, deletion, observedGeneration, lastUpdated and
// the conditions Ready, InstanceProvisioned, Drained and Deleting. status.nodeRef and NodeLinked
// belong to the node linker, HealthCheckSucceeded to the health check controller.
//
// Machines (or their namespace's objects) with the paused annotation are left alone. Time comes
// from an injected clock.
//
// # Requeues
//
// Events drive most work (the Machine, its Node, its MachineClass). Timed requeues: drainPoll while
// draining, instancePoll while the instance is being deleted, volumePoll while volumes detach,
// classRetry while a MachineClass is missing, and whatever a provider asks for with RequeueAfter.
//
// Start reading at Reconcile in controller.go; provision.go, node.go and delete.go hold the steps.
package machine
