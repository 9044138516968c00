package machinedeployment

import v1beta1 "machineapi.dev/machine-api/api/v1beta1"

// Annotations the deployment keeps on its MachineSets, as apps/v1 does, so that a change of the
// deployment's replicas is spread over its sets exactly once.
const (
	// DesiredReplicasAnnotation is the deployment's spec.replicas when the set was last scaled.
	DesiredReplicasAnnotation = v1beta1.Prefix + "desired-replicas"
	// MaxReplicasAnnotation is the deployment's spec.replicas + maxSurge when the set was last scaled.
	MaxReplicasAnnotation = v1beta1.Prefix + "max-replicas"
)

// Condition reasons and event reasons.
const (
	// Progressing.
	ReasonNewSetCreated    = "NewMachineSetCreated"
	ReasonSetUpdated       = "MachineSetUpdated"
	ReasonNewSetAvailable  = "NewMachineSetAvailable"
	ReasonDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonPaused           = "DeploymentPaused"
	ReasonSetNameTaken     = "MachineSetNameTaken"
	ReasonWaitingForSets   = "WaitingForMachineSets"

	// Available.
	ReasonMinimumAvailable   = "MinimumMachinesAvailable"
	ReasonMinimumUnavailable = "MinimumMachinesUnavailable"

	// Events.
	EventScaled          = "ScalingMachineSet"
	EventSetCreated      = "MachineSetCreated"
	EventSetDeleted      = "MachineSetDeleted"
	EventMetadataUpdated = "MetadataUpdated"
	EventReplacing       = "ReplacingMachines"
)
