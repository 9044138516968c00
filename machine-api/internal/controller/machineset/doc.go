// Package machineset is the MachineSet controller: it keeps spec.replicas Machines that match a
// set's selector, creating them from its template and deleting the surplus in a documented order.
//
// # What a reconcile does
//
// get → paused? leave it → finalizer (preset on sets a MachineDeployment creates) → claim the
// Machines (controller index: the set's own, minus those whose labels stopped matching, which are
// released; plus matching orphans, which are adopted) → on deletion, delete every Machine and drop
// the finalizer once they are gone (there is no garbage collection by owner references) → read the
// owning MachineDeployment → propagate template metadata in place → scale. Status is computed from
// what the steps saw (status.go, pure functions) and written once, by one merge patch with
// optimistic locking, and not at all when it did not change.
//
// # Scaling, without overshoot
//
// A set counts Machines that are not deleting. Creating: random names `<set>-<5 chars>`, the set as
// controller, the set-name label (and deployment-name when the set has one), the Machine
// finalizer already present, template labels, annotations and spec; slow-start batches (1, 2, 4,
// ... 64 calls at a time, at most 500 per reconcile) that stop at the first failure. Deleting:
// the first n of the deletion order, never more — scaling down by one deletes exactly one.
//
// After each create, delete, adoption or release the set records an expectation (expectations.go)
// and does not create or delete again until its cache shows all of them (or five minutes pass,
// the fallback for a lost event). Until then status.observedGeneration does not advance, which
// tells a MachineDeployment the set's counts are not final. A new process starts with no
// expectations after its cache has synced, which already holds every earlier write, so a restart
// in the middle of a scale-up creates nothing twice. A create that failed without saying whether
// it was stored (a broken connection, an API server timeout) stays expected too, until the cache
// shows the Machine or, unsureCreateCheck later, a direct read says it does not exist; only a
// refusal (4xx) is forgotten at once.
//
// Frozen: a set whose Machine count rose above replicas + surge (another writer, or a bug) turns
// Frozen=True, stops creating and deletes the excess in deletion order; it turns False once back
// within bounds. surge is the owning MachineDeployment's resolved maxSurge for RollingUpdate, and 0
// for Recreate, OnDelete and standalone sets. A count above the bound because replicas was lowered
// is an ordinary scale-down, not a freeze.
//
// # Deletion order
//
// Highest priority first: Machines already deleting; annotated machine.machineapi.dev/delete-machine;
// unhealthy (phase Failed, no nodeRef, NodeLinked False, HealthCheckSucceeded False); the rest.
// Within a class, spec.deletePolicy: Random (default; a stable FNV hash of the UID, so every
// reconcile agrees), Newest (latest creationTimestamp first), Oldest; ties by name.
//
// # Metadata in place
//
// A change to template.metadata, template.spec.metadata or template.spec.taints replaces no Machine:
// every Machine of the set gets the template's labels and annotations (a key it got from an earlier
// template, listed in the template-labels / template-annotations annotations, is removed when the
// template drops it; keys set by others are left alone) and exactly the template's spec.metadata and
// spec.taints, which the node linker carries to the Node. Other template changes apply to new
// Machines only (a MachineDeployment rolls them out).
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
// Ready condition True) and AutoscalerBounds. status.readyReplicas counts Machines whose Ready
// condition is True; availableReplicas those Ready for minReadySeconds, measured from the
// condition's lastTransitionTime.
//
// # Requeues
//
// Events drive the work (the set, its Machines, orphans its selector matches). Timed requeues: when
// the next ready Machine becomes available (minReadySeconds), and the expectations timeout.
//
// Start reading at Reconcile in controller.go; claim.go, scale.go, metadata.go and delete.go hold
// the steps, order.go the deletion order, status.go the status.
package machineset
