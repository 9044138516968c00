package machineset

import "machineapi.dev/machine-api/internal/uptodate"

// Annotations this controller keeps on the Machines it creates or adopts, so that a key (or hook)
// removed from the template is removed from the Machine while what anyone else set is left alone.
// They are defined by package uptodate, which applies the template.
const (
	// TemplateLabelsAnnotation lists (comma-separated, sorted) the label keys a Machine got from
	// its set's template.
	TemplateLabelsAnnotation = uptodate.TemplateLabelsAnnotation
	// TemplateAnnotationsAnnotation lists the annotation keys a Machine got from its set's template.
	TemplateAnnotationsAnnotation = uptodate.TemplateAnnotationsAnnotation
	// TemplateHooksAnnotation lists the lifecycle hooks a Machine got from its set's template.
	TemplateHooksAnnotation = uptodate.TemplateHooksAnnotation
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

	// AutoscalerBounds: see package autoscaler.

	// Events without a condition of their own.
	EventCreated         = "SuccessfulCreate"
	EventDeleted         = "SuccessfulDelete"
	EventAdopted         = "Adopted"
	EventReleased        = "Released"
	EventMetadataUpdated = "MetadataUpdated"
)
