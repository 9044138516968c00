package machineset

import v1beta1 "machineapi.dev/machine-api/api/v1beta1"

// Condition types this controller writes besides those of the API package.
const (
	// AutoscalerBoundsCondition is present when the cluster-autoscaler's min/max size annotations
	// are: True when spec.replicas lies within them, False (with a reason saying which bound)
	// when it does not or when they cannot be read.
	AutoscalerBoundsCondition = "AutoscalerBounds"
)

// Annotations this controller keeps on the Machines it creates or adopts.
const (
	// TemplateLabelsAnnotation lists (comma-separated, sorted) the label keys a Machine got from
	// its set's template, so that a key removed from the template is removed from the Machine
	// while labels set by anyone else are left alone.
	TemplateLabelsAnnotation = v1beta1.Prefix + "template-labels"
	// TemplateAnnotationsAnnotation lists the annotation keys a Machine got from its set's template.
	TemplateAnnotationsAnnotation = v1beta1.Prefix + "template-annotations"
)

// Condition reasons and event reasons.
const (
	// ScalingUp.
	ReasonScalingUp    = "ScalingUp"
	ReasonNotScalingUp = "NotScalingUp"
	ReasonCreateFailed = "MachineCreateFailed"
	ReasonCreatesHeld  = "CreatesHeld"
	ReasonFrozen       = "Frozen"
	ReasonDeleting     = "Deleting"

	// ScalingDown.
	ReasonScalingDown         = "ScalingDown"
	ReasonNotScalingDown      = "NotScalingDown"
	ReasonDeleteFailed        = "MachineDeleteFailed"
	ReasonWaitingForDeletions = "WaitingForMachineDeletion"

	// Frozen.
	ReasonTooManyMachines = "TooManyMachines"
	ReasonWithinBounds    = "WithinBounds"

	// Ready.
	ReasonMachinesReady    = "MachinesReady"
	ReasonMachinesNotReady = "MachinesNotReady"

	// AutoscalerBounds.
	ReasonWithinAutoscalerBounds = "WithinAutoscalerBounds"
	ReasonBelowMinSize           = "ReplicasBelowMinSize"
	ReasonAboveMaxSize           = "ReplicasAboveMaxSize"
	ReasonInvalidBounds          = "InvalidAutoscalerAnnotations"

	// Events without a condition of their own.
	EventCreated         = "SuccessfulCreate"
	EventDeleted         = "SuccessfulDelete"
	EventAdopted         = "Adopted"
	EventReleased        = "Released"
	EventMetadataUpdated = "MetadataUpdated"
)
