// Package machineset is the MachineSet controller: it keeps spec.replicas Machines that match a
// set's selector, creating them from its template and deleting the surplus in a documented order.
//
// # What a reconcile does
//
// get → paused (machine.machineapi.dev/paused or cluster.x-k8s.io/paused, v1beta1.PausedBy)? leave it → finalizer (preset on sets a MachineDeployment creates) → claim the
// Machines (controller index: the set's own, minus those whose labels stopped matching, which are
// released; plus matching orphans, which are adopted) → on deletion, delete every Machine and drop
// the finalizer once they are gone (there is no garbage collection by owner references) → read the
// owning MachineDeployment → propagate template metadata in place → scale → delete the Machines a
// health check asked the set to replace (their replacements created by scale). Status is computed from what the steps saw
// (status.go, pure functions) and written once, by one server-side apply of the whole status (field
// manager machineset-controller, see package write), and not at all when it did not change.
//
// # Scaling, without overshoot
//
// A set counts Machines that are not deleting. Creating: random names `<set>-<5 chars>`, the set as
// controller, the set-name label (and deployment-name when the set has one), the Machine
// finalizer already present, template labels, annotations and spec; slow-start batches (1, 2, 4,
// ... 64 calls at a time, at most 500 per reconcile) that stop at the first failure, and at most
// maxStarting (200) Machines on their way to Running at once (starting: created less than 5
// minutes ago, not Running, not Failed), so that a scale-up of thousands does not queue them all
// in the machine controller at once. Deleting:
// the first n of the deletion order, never more — scaling down by one deletes exactly one.
//
// Every create, delete, adoption and release (and the set's own status write) goes through the
// manager's guarded client, and the set is not reconciled again until its cache shows all of them
// (or five minutes pass, the fallback for a lost event): the consistency guard, package
// machineapi.dev/nodelink/consistency, wired by the manager. Meanwhile nothing is counted, created
// or deleted, and status.observedGeneration does not advance, which tells a MachineDeployment the
// set's counts are not final. A new process starts with nothing awaited after its cache has
// synced, which already holds every earlier write, so a restart in the middle of a scale-up
// creates nothing twice. A create that failed without saying whether it was stored (a broken
// connection, an API server timeout) is awaited too, until the cache shows the Machine or, 70s
// later (consistency.DefaultUnsureCreateCheck), a direct read says it does not exist; only a
// refusal (4xx) is forgotten at once.
//
// Frozen: a set whose Machine count rose above replicas + surge (another writer, or a bug) turns
// Frozen=True, stops creating and deletes the excess in deletion order; it turns False once back
// within bounds. surge is the owning MachineDeployment's resolved maxSurge for RollingUpdate, and 0
// for Recreate, OnDelete and standalone sets. A count above the bound because replicas was lowered
// is an ordinary scale-down, not a freeze.
//
// # Remediation
//
// A MachineHealthCheck only writes its verdict: OwnerRemediated=False on a Machine of the set
// (package lineage). The set remediates: such a Machine no longer counts toward replicas, so scale
// creates its replacement, which carries the Machine's lineage from its creation (count + 1, or 1
// when the check says the lineage starts over; the longest lineages first) and names it in the
// replaces annotation; then remediateMachines deletes the Machine, whose deletion drains its Node
// as any other. A requested Machine the set does not replace (it was scaled down, is Frozen, holds
// its creates) is deleted all the same, with a LineageEnded event. Which requested Machines still
// wait for a replacement is read from the Machines at every reconcile, so a restart between the
// create and the delete creates no second replacement. A paused set leaves its requested Machines
// until it is unpaused. The step is remediateMachines, after scale (lineage.go).
//
// # Launch timeout
//
// With spec.machineLaunch, a Machine not Running (no nodeRef) timeoutSeconds after its creation is
// treated like a requested one: it stops counting, scale creates its replacement (continuing its
// lineage), remediateMachines deletes it with a Warning LaunchTimedOut event. A stuck Machine
// whose lineage was already replaced maxRetries times is kept. Machines whose NodeLinked is
// Unknown are not judged. Stuck is computed from the Machines and the clock at each reconcile
// (launch.go); the MachinesProvisioned condition reports it.
//
// # Interruptions
//
// A Machine with status.interruption (the machine controller records a provider's notice or the
// interruption-deadline annotation) is replaced first too, its lineage handed on with its count
// unchanged (lineage.Succeed); remediateMachines deletes it once its replacement is Running, or
// interruptionLead (2m) before the deadline, and requeues for that moment meanwhile
// (interruption.go).
//
// # Deletion order
//
// Highest priority first: Machines already deleting; annotated machine.machineapi.dev/delete-machine;
// unhealthy (phase Failed, no nodeRef, NodeLinked False, HealthCheckSucceeded False); the rest.
// Within a class, spec.deletePolicy: Random (default; a stable FNV hash of the UID, so every
// reconcile agrees), Newest (latest creationTimestamp first), Oldest; ties by name. The
// delete-machine marks are read from the API server when the set shrinks (one list of its
// Machines): the cluster-autoscaler marks a Machine just before it lowers the replicas, and the
// cache may show the replicas first. A Machine chosen because the cache shows it without a Node
// (and so deleted without asking the disruption budgets) is deleted only if it is unchanged since:
// a resourceVersion precondition, and a look again at its update event (deleteNow).
//
// # In-place fields
//
// A change to the template's in-place fields (uptodate.InPlaceFields) replaces no Machine: every
// Machine of the set gets the template's labels, annotations and lifecycle hooks (one it got from
// an earlier template, listed in the template-labels / template-annotations /
// template-lifecycle-hooks annotations, is removed when the template drops it; what others set is
// left alone) and exactly the template's spec.metadata, spec.taints and spec.deletion; the node
// linker carries metadata and taints to the Node. A Machine being deleted gets spec.deletion only,
// so that a new timeout applies to its deletion in progress (a hook cannot be added to it). Other
// template changes apply to new Machines only (a MachineDeployment rolls them out).
//
// # In-place updates
//
// When its deployment allows in-place updates (spec.rollout.inPlace) and gave the set a new
// template instead of creating a set, updateInPlace (inplace.go) gives each Machine whose
// provider's plan (status.inPlaceUpdate) covers the template the template's providerSpec and
// versions: at once when the update does not stop workloads, else within maxUnavailable and the
// pool's disruption budgets (withinBudget, as a Rollout). The machine controller then updates the
// instance. A Machine updating disruptively counts against the budgets like one being deleted.
//
// # Autoscaler annotations
//
// When machine.machineapi.dev/cluster-api-autoscaler-node-group-min-size / -max-size are present,
// spec.replicas is honoured as written, and the AutoscalerBounds condition (with a Warning event)
// says when it lies outside them or the annotations are invalid. Nothing is clamped or rejected:
// the cluster-autoscaler never leaves its bounds, and a person who does is told, not overruled.
//
// # Conditions
//
// ScalingUp, ScalingDown (True too while Machines drain), Frozen, Ready (every wanted Machine's
// Ready condition True), AutoscalerBounds and MachinesProvisioned. status.readyReplicas counts Machines whose Ready
// condition is True; availableReplicas those Ready for minReadySeconds, measured from the
// condition's lastTransitionTime (package availability); upToDateReplicas those whose UpToDate
// condition (the machine controller's) is True.
//
// # Requeues
//
// Events drive the work (the set, its Machines, orphans its selector matches). Timed requeues: when
// the next ready Machine becomes available (minReadySeconds), when the next Machine not Running
// reaches its launch timeout, write.ConflictRetry after a guarded
// write (its finalizer) met a conflict, and the consistency guard's: consistency.Recheck while the
// cache does not show the set's earlier writes, or when an unsure create is due to be checked.
//
// Start reading at Reconcile in controller.go; claim.go, scale.go, metadata.go, lineage.go
// (remediation) and delete.go hold the steps, order.go the deletion order, status.go the status.
package machineset
