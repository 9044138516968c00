package v1beta1

// Condition types of a Cluster, all written by the cluster controller. Reasons are defined by the
// controller package.
const (
	// InfrastructureReadyCondition: the cluster provider reports the cluster's infrastructure
	// exists and is ready; False says whether it is being created, failed for good
	// (InvalidConfiguration) or is retrying, and during deletion that it is being deleted.
	InfrastructureReadyCondition = "InfrastructureReady"

	// WorkerPoolsReadyCondition: every worker pool has its MachineDeployment with the pool's
	// spec. False names the pools that could not be rendered (for example a MachineDeployment of
	// the same name that the Cluster does not own).
	WorkerPoolsReadyCondition = "WorkerPoolsReady"

	// MachinesReadyCondition: as many of the cluster's machines are Ready as are desired.
	MachinesReadyCondition = "MachinesReady"

	// WorkloadAPIReachableCondition, present only when spec.kubeconfigSecretRef is set: the
	// workload cluster's API server answers, so its Nodes are being linked to the cluster's
	// Machines. While it is False nothing is unlinked, remediated or deleted because of it.
	WorkloadAPIReachableCondition = "WorkloadAPIReachable"

	// DeletingCondition, present only while the Cluster is being deleted: its reason names the
	// step deletion waits on and its message what it waits for.
	DeletingCondition = "Deleting"
)

// Condition types the cluster-manager writes on Machines (of machine.machineapi.dev), with its own
// server-side apply field manager, so they never replace the machine controller's or the node
// linker's conditions.
const (
	// WorkloadNodeDrainedCondition, present only on a deleting Machine that had the DrainHookName
	// hook: Unknown while other preDrain hooks hold the drain, False while the cluster-manager
	// drains the Machine's Node in the workload cluster (the message names what blocks the drain
	// and how to let the Machine go without it; the last transition to False is when draining
	// began, from which spec.deletion.nodeDrainTimeoutSeconds counts), True once the hook is
	// removed, with a reason saying why (drained, nothing to drain, timed out).
	WorkloadNodeDrainedCondition = "WorkloadNodeDrained"
)
