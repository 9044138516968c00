package nodelink

// ConditionNodeLinked is the one condition nodelink writes on a machine. True means status.nodeRef
// names an existing Node that carries the machine's metadata; False carries one of the reasons
// below, each with a message that names the objects involved; Unknown (ReasonNodesUnreachable)
// means that whether a Node matches cannot be known, because the Node side's API server is out of
// sight.
const ConditionNodeLinked = "NodeLinked"

// Reasons of the NodeLinked condition.
const (
	// ReasonLinked (True): the machine is linked to the Node in status.nodeRef.
	ReasonLinked = "Linked"

	// ReasonWaitingForNode (False): no Node matches yet — none has the machine's providerID or,
	// while the machine has no providerID, one of its InternalIPs. Nothing to do but wait for the
	// Node to register; no event is emitted for this expected state.
	ReasonWaitingForNode = "WaitingForNode"

	// ReasonMultipleNodesMatch (False): more than one Node matches the machine. Nothing is linked
	// until only one remains (delete the stale Node, or fix its providerID).
	ReasonMultipleNodesMatch = "MultipleNodesMatch"

	// ReasonMultipleMachinesMatch (False): the one Node that matches this machine also matches
	// another unlinked machine (two machines with the same providerID, or the same InternalIP and
	// no providerID). Nothing is linked until only one machine matches.
	ReasonMultipleMachinesMatch = "MultipleMachinesMatch"

	// ReasonNodeLinkedToOtherMachine (False): the Node with this machine's providerID is already
	// linked to another machine that still exists.
	ReasonNodeLinkedToOtherMachine = "NodeLinkedToOtherMachine"

	// ReasonIPMatchRefused (False): the only Node with the machine's InternalIP was created before
	// the machine or is linked to another existing machine: the IP was probably recycled, and the
	// old Node must not be adopted. Set spec.providerID, or delete the stale Node.
	ReasonIPMatchRefused = "IPMatchRefused"

	// ReasonNodesUnreachable (Unknown): no Node matches the machine (which has a providerID or
	// an InternalIP to match by) in the last state nodelink saw, and the Node side's API server (a
	// workload cluster's) is not answering its probe, or answers again but the Node cache has not
	// caught up with it yet: a Node that registered meanwhile cannot be seen, so whether the
	// machine has one is unknown. Written instead of WaitingForNode, and replaced by Linked or
	// WaitingForNode once the Node cache has caught up; health checks should not count the time
	// spent here against a node startup timeout. It never applies to a linked machine (its last
	// Node state is kept), nor to a linker whose Nodes are in the machines' own cluster. No event
	// is emitted for it: the outage concerns the whole cluster and is reported once by whoever
	// runs the linker (Linker.Reachability, Options.OnReachabilityChange), not once per waiting
	// machine.
	ReasonNodesUnreachable = "NodesUnreachable"

	// ReasonNodeDeleted (False): the Node in status.nodeRef no longer exists. status.nodeRef is
	// kept, so health checks can see "nodeRef set but Node gone"; a Node that re-registers with the
	// machine's providerID is linked again.
	ReasonNodeDeleted = "NodeDeleted"
)

// EventNodeMetadataRefused (Warning, on the machine): the patch that gives the linked Node the
// machine's labels, annotations and taints was refused (not a conflict, which is retried on the
// Node's next version); the Node keeps its initialization taint, and takes no workloads, until a
// retry succeeds. The message names the Node and the API server's answer.
const EventNodeMetadataRefused = "NodeMetadataRefused"
