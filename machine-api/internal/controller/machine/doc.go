// Package machine is the Machine controller: it provisions a Machine's instance through the
// provider, follows its Node to Running, and on deletion drains and removes everything in order.
//
// # Create path
//
// finalizer → phase Provisioning, persisted before the first Create (written mid-reconcile, and
// Create follows in the same reconcile once it is stored) → Exists before every Create
// (so a stale cache or a crash between Create and the status write never makes a second instance)
// → Create (or Update when the instance exists) → spec.providerID persisted, phase Provisioned →
// Running once the Machine is linked to its Node (status.nodeRef) and the Node is Ready. An
// instance that disappears after it was provisioned turns the Machine Failed (InstanceMissing); it
// is never re-created here — replacing machines is the job of sets and health checks. An invalid
// configuration turns it Failed (InvalidConfiguration) until its spec changes.
//
// # UpToDate
//
// Each reconcile of a Machine that is not deleting decides its UpToDate condition with
// uptodate.Decide: against the template of its MachineSet's MachineDeployment (or of the set when no
// deployment owns it) and the deployment's spec.rollout, and against the MachineClass it was
// created from. When the instance is created the controller records that class in
// status.machineClass (its spec hash and the hashes of its fields), so that a later edit is named
// by path. Changes of a set's or deployment's template (those that need new Machines) and of a
// deployment's spec.rollout wake the Machines concerned; a Machine that will become due for
// replacement by spec.rollout is requeued for that moment.
//
// # Interruptions
//
// A provisioned Machine that is not being deleted is asked whether the end of its instance is
// announced: by the interruption-deadline annotation, which wins, or by the provider when it
// implements provider.InterruptionNotifier (whose notify queues the Machine). The answer is
// status.interruption and the InstanceInterruption condition (interruption.go); the Machine's
// MachineSet acts on it.
//
// # In-place updates
//
// When the Machine's deployment allows in-place updates (spec.rollout.inPlace) and the provider
// implements provider.InPlaceUpdater, updateInPlace (inplace.go) asks the provider once per
// template how it would bring the instance to the deployment's template and records the plan in
// status.inPlaceUpdate; once the Machine's set has given it the template's spec, it carries the
// update out one step per reconcile (drain for a disruptive one, the provider's UpdateInPlace, the
// Node Ready again, uncordon), recording each step so that a restart resumes it, with the Updating
// condition naming the step.
//
// # Delete path
//
// An ordered pipeline that stops at the first step still waiting; the Deleting condition's reason
// names that step and its message what it waits for: WaitingForPreDrainHooks → DrainingNode (cordon
// and evict with the drain module, by the MachineDrainRules of the Machine's namespace that select
// it and its drainDeadlineSeconds, past which pods still holding the drain are deleted, with a
// PodsDeleted event; skipped with the exclude-node-draining annotation, without a Node, or after
// spec.deletion.nodeDrainTimeoutSeconds; the drain module takes a fast path on an unreachable Node
// and deletes its pods once it has been unreachable for 5 minutes) → WaitingForVolumeDetach (the
// volumes the drain freed, as the drain module scopes them; skipped with the
// exclude-wait-for-node-volume-detach annotation; bounded by nodeVolumeDetachTimeoutSeconds) →
// WaitingForPreTerminateHooks → DeletingInstance (provider Delete, then Exists until false) →
// DeletingNode (bounded by nodeDeletionTimeoutSeconds, default 10s) → finalizer removed. The start
// of each bounded step is recorded in status.deletion, so timeouts survive restarts.
//
// # What it writes
//
// Status is computed from what a reconcile observed (status.go, pure functions) and written once per
// reconcile (the reconcile that starts provisioning also writes Provisioning before Create) by one
// server-side apply (field manager machine-controller) of only the fields it owns,
// so that it never conflicts with, nor overwrites, other controllers' conditions, which the API
// server merges by type. It owns phase, addresses, providerStatus, versions, provisionedTime,
// failureReason/Message, deletion, machineClass, interruption, observedGeneration, lastUpdated and
// the conditions Ready, InstanceProvisioned, UpToDate, Drained, Deleting and InstanceInterruption, whose transition times
// come from the injected clock. HealthCheckSucceeded belongs to the health check controller.
//
// status.nodeRef and NodeLinked are the node linker's decision. For the Machines the linker of
// this process handles (Reconciler.Linker), this controller records them (link.go): each
// reconcile asks the linker for the link (nodelink.Linker.Link, which claims the Node first) and
// writes it with the rest of the status, so a Machine whose Node is Ready when it is linked
// becomes Running in the same write; the linker wakes the Machine when its link changes
// (LinkChanged). Every write then carries the two fields as last recorded: this controller owns
// them, and a field an apply leaves out is removed. A Machine that leaves the linker's scope (its
// labels no longer match --node-link-selector) loses them at its next status write, and the
// linker now in charge links it again. Machines linked by another linker (cluster-manager's, for
// Nodes in a workload cluster) are never given these fields by this controller.
//
// A reconcile runs only once the cache shows what the Machine's earlier reconciles wrote (the
// Machine, its Node, the linker's Node patch): the consistency guard, package
// machineapi.dev/nodelink/consistency, wired by the manager.
//
// Machines (or their namespace's objects) with the paused annotation are left alone. Time comes
// from an injected clock.
//
// # Requeues
//
// Events drive most work (the Machine, its Node, its MachineClass, its set's and deployment's
// template, the MachineDrainRules of its namespace while it is being deleted, through the
// index.MachineDeleting index, and the node linker's LinkChanged). Timed requeues: when the Machine becomes due for replacement
// (UpToDate), drainPoll while draining (sooner when a pod is to be deleted by the deadline),
// instancePoll while the instance is being deleted, volumePoll while volumes detach, classRetry
// while a MachineClass is missing, whatever a provider asks for with RequeueAfter, and
// write.ConflictRetry when adding or removing the finalizer (a merge patch guarded by the
// resourceVersion, since it replaces the finalizers list) met a conflict: expected, and retried
// without an error; consistency.Recheck while the cache does not show the earlier writes.
//
// # Metrics
//
// metrics.go: provider calls, drains and the time to Running are observed where they happen;
// Collector computes the Machines' gauges (phases, readiness per set, the oldest Machine on its
// way to Running, deletions by step, drains in progress and what holds them, with their age) from
// the cache at each scrape. What holds a drain (the causes of its blocked pods, or an unusable
// MachineDrainRule) is in status.deletion.drainBlockedBy, written with the rest of the status, so
// the gauges are computed from what kubectl shows and survive a restart.
//
// Start reading at Reconcile in controller.go; link.go, provision.go, node.go and delete.go hold
// the steps.
package machine
