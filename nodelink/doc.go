// Package nodelink links every Node to the machine-like object it runs on, as soon as the Node
// appears, and then keeps the Node's identity-bearing metadata (labels, annotations, taints) in
// sync with that object. It knows no machine types: an [Adapter] tells it how to read and record
// fields on one kind of machine-like object (machine-api's Machine, Cluster API's Machine, ...);
// [NewUnstructuredAdapter] builds one for any CRD from field paths.
//
// # What it owns
//
// On the machine: the node reference (status.nodeRef) and one condition, [ConditionNodeLinked].
// Nothing else of its status is written. By default the write is a JSON merge patch computed from
// the object as read, guarded by a resourceVersion precondition (optimistic locking), so conditions
// and status fields written by other controllers are carried over unchanged, whether the CRD
// declares its conditions as a map-list or as an atomic list (server-side apply would clobber the
// latter). An adapter whose CRD has a map-list of conditions says so by implementing
// [LinkApplier]: the write is then a server-side apply of those two fields under the field manager
// Options.Name, which the API server merges with other controllers' writes and never refuses
// because of them. With [Options.Recorder], the linker's reconciles write nothing: a controller
// that writes the machines' status in the same process records the link in its own write
// ([LinkRecorder], recorder.go), after [Linker.Link], called from its reconcile, has claimed the
// Node.
//
// On the Node: the annotations <prefix>/machine and <prefix>/cluster-namespace (the machine's
// name and namespace, read by cluster-autoscaler), the labels, annotations and taints the machine
// asks for, and three bookkeeping annotations that record which of them came from the machine:
// <prefix>/labels-from-machine, <prefix>/annotations-from-machine and <prefix>/taints-from-machine
// (taints as key:Effect). A key the machine asks for wins over a value already on the Node and
// becomes owned; a key is removed from the Node only when it is recorded as owned and the machine
// no longer asks for it; every other key is left alone. The <prefix> is [Options.AnnotationPrefix].
//
// # Invariants
//
//   - Matching goes through field indexers only (see indexes.go), never a list of every object:
//     per-event cost does not grow with the number of machines or Nodes.
//   - A machine is matched to a Node by spec.providerID or, while it has no providerID, by an
//     InternalIP. More than one candidate, on either side, links nothing and is reported
//     (MultipleNodesMatch, MultipleMachinesMatch); the decision depends only on the current
//     objects, so it cannot flap between two candidates.
//   - IP-reuse guard: an InternalIP match is refused when the Node was created before the machine
//     (creation timestamps have one-second resolution; equal times are accepted) or when the Node
//     is linked to another machine that still exists (IPMatchRefused).
//   - Once linked, a machine keeps its Node. If that Node is deleted the condition turns
//     NodeLinked=False/NodeDeleted and status.nodeRef is kept, so health checks see "nodeRef set
//     but Node gone"; only a Node with the machine's own providerID re-links it (a kubelet that
//     re-registers its deleted Node object).
//   - Every write is one patch with optimistic locking (or, on a LinkApplier's machines, one
//     apply of nodelink's own fields), and nothing is written when nothing changed: a reconcile
//     of a linked, in-sync pair makes no API call. Linking a pair costs two
//     writes (the Node patch, then the machine's status patch): a machine's reconcile runs only
//     once the caches show what its earlier reconciles wrote (the consistency guard, package
//     consistency), so it never writes again from, nor fails the lock on, a copy its own write
//     superseded.
//   - Machines outside Options.Namespace or Options.Selector, and machines Options.Paused reports,
//     are neither written nor have their Nodes written.
//   - A deleted machine is never blocked (no finalizer). Its Node keeps everything except what the
//     machine owned; cleanup runs on the machine's deletion event, or on a Node event naming a
//     machine that no longer exists (so a deletion missed while nodelink was down is caught up).
//   - Nodelink deletes nothing. While the Node side is unreachable its cache keeps the last state,
//     so nothing is unlinked or reported deleted because of it; [Linker.Reachability] and
//     [Options.OnReachabilityChange] tell the caller.
//   - "No Node matches" is not claimed when it cannot be known: when the Nodes are behind another
//     API server (a workload cluster) that does not answer, or answers again but the Node cache
//     has not caught up with it, an unlinked machine is reported NodeLinked=Unknown with
//     [ReasonNodesUnreachable] instead of WaitingForNode (sight.go), so that a health check does
//     not count the outage against its node startup timeout.
//
// # Requeues
//
// None on a timer but the consistency guard's (consistency.Recheck while the caches do not show a
// machine's earlier writes yet): every decision depends only on cached objects and is
// re-evaluated on the Node and machine events that can change it (watch.go maps each event to the
// few machines concerned), and, for Nodes behind another API server, on a change of whether they
// can be seen (the reachability probe feeds a channel source; sight.go enqueues the machines
// waiting for a Node).
// Transient errors are returned and retried with the controller's exponential backoff. An
// optimistic-lock conflict on a Node is not retried at once (the cache would still show the stale
// copy): the Node's next version in the cache brings the machine back, even when it changes
// nothing else nodelink reads, such as a kubelet's status write (stale.go). A conflict on a machine's status merge patch (another controller wrote
// it) is written once more on top of the machine read from the API server; an apply has none.
//
// # Metrics
//
// Counters of links, conflicts and IP-reuse refusals (metrics.go), in controller-runtime's
// registry, counted once per change of a machine's NodeLinked reason.
//
// # Where to start
//
// [Setup] (a manager's linker) and [NewRemoteLinker] (a linker the caller starts and stops, for a
// workload cluster, buildable while that API server is down) are in linker.go; cmd/nodelink is the standalone binary for any machine CRD. Reconcile, in reconcile.go, reads like a table of contents:
// matching.go decides (pure), ownership.go computes the Node metadata (pure), status.go computes
// the condition (pure), nodepatch.go and record.go write; recorder.go hands the machine's side
// over to a LinkRecorder.
package nodelink
