package cluster

// Condition reasons the cluster controller writes, and event reasons.
const (
	// InfrastructureReady reasons.
	ReasonInfrastructureProvisioned = "InfrastructureProvisioned"
	ReasonProvisioning              = "Provisioning"
	ReasonInvalidConfiguration      = "InvalidConfiguration"
	ReasonProviderError             = "ProviderError"
	ReasonDeletingInfrastructure    = "DeletingInfrastructure"

	// WorkerPoolsReady reasons.
	ReasonPoolsReconciled           = "PoolsReconciled"
	ReasonWaitingForInfrastructure  = "WaitingForInfrastructure"
	ReasonMachineDeploymentConflict = "MachineDeploymentConflict"

	// MachinesReady reasons.
	ReasonMachinesReady     = "MachinesReady"
	ReasonWaitingForMachine = "WaitingForMachines"

	// WorkloadAPIReachable reasons.
	ReasonReachable                = "Reachable"
	ReasonUnreachable              = "Unreachable"
	ReasonProbing                  = "Probing"
	ReasonKubeconfigSecretNotFound = "KubeconfigSecretNotFound"
	ReasonKubeconfigInvalid        = "KubeconfigInvalid"
	ReasonLinkerFailed             = "LinkerFailed"

	// Deleting reasons: the step deletion waits on.
	ReasonDeletingMachines  = "DeletingMachines"
	ReasonRemovingFinalizer = "RemovingFinalizer"

	// Event reasons without a condition of their own.
	EventPoolCreated   = "WorkerPoolCreated"
	EventPoolUpdated   = "WorkerPoolUpdated"
	EventPoolDeleted   = "WorkerPoolDeleted"
	EventLinkerStarted = "RemoteNodeLinkingStarted"
	EventLinkerStopped = "RemoteNodeLinkingStopped"
	EventProvisioned   = "Provisioned"
	EventFailed        = "Failed"
	EventDeleting      = "Deleting"
)
