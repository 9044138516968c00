package machine

// Condition reasons the machine controller writes, and event reasons.
const (
	// InstanceProvisioned reasons.
	ReasonPending              = "Pending"
	ReasonProvisioning         = "Provisioning"
	ReasonInstanceExists       = "InstanceExists"
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonInstanceMissing      = "InstanceMissing"
	ReasonMachineClassNotFound = "MachineClassNotFound"
	ReasonProviderError        = "ProviderError"
	ReasonProviderWaiting      = "ProviderWaiting"

	// Ready reasons.
	ReasonNodeReady      = "NodeReady"
	ReasonWaitingForNode = "WaitingForNode"
	ReasonNodeNotReady   = "NodeNotReady"
	ReasonNodeNotFound   = "NodeNotFound"
	// ReasonNodeInOtherCluster: the Node lives in a workload cluster this manager cannot see.
	ReasonNodeInOtherCluster = "NodeInOtherCluster"
	// ReasonNodesUnreachable (Ready=Unknown): no Node is linked, and the node linker reports that
	// it cannot see the Nodes (NodeLinked=Unknown/NodesUnreachable), so one may have registered.
	ReasonNodesUnreachable = "NodesUnreachable"
	ReasonFailed           = "Failed"
	ReasonDeleting         = "Deleting"

	// Deleting reasons: the step deletion waits on.
	ReasonWaitingForPreDrainHooks     = "WaitingForPreDrainHooks"
	ReasonDrainingNode                = "DrainingNode"
	ReasonWaitingForVolumeDetach      = "WaitingForVolumeDetach"
	ReasonWaitingForPreTerminateHooks = "WaitingForPreTerminateHooks"
	ReasonDeletingInstance            = "DeletingInstance"
	ReasonDeletingNode                = "DeletingNode"
	ReasonRemovingFinalizer           = "RemovingFinalizer"

	// Drained reasons.
	ReasonDraining     = "Draining"
	ReasonDrained      = "Drained"
	ReasonDrainSkipped = "DrainSkipped"
	ReasonDrainTimeout = "DrainTimeout"

	// Event reasons without a condition of their own.
	EventInstanceAdopted    = "InstanceAdopted"
	EventInstanceDeleted    = "InstanceDeleted"
	EventNodeDeleted        = "NodeDeleted"
	EventNodeDeleteGaveUp   = "NodeDeletionTimeout"
	EventVolumeDetachGaveUp = "VolumeDetachTimeout"
	// EventPodsDeleted (Warning): a drain step deleted pods instead of evicting them, past the
	// pod deadline (drainDeadlineSeconds) or on a Node unreachable for longer than the drain
	// module's bound; the message names each pod and the budgets it was deleted over.
	EventPodsDeleted = "PodsDeleted"
)
