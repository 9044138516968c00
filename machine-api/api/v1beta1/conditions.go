package v1beta1

// Condition types. Each controller writes only the types it owns (in parentheses).
const (
	// ReadyCondition on a Machine: the Node is linked and Ready (machine controller). On a
	// MachineSet: every wanted Machine is ready (set controller).
	ReadyCondition = "Ready"
	// InstanceProvisionedCondition: the provider's instance exists (machine controller).
	InstanceProvisionedCondition = "InstanceProvisioned"
	// NodeLinkedCondition: the Machine is linked to its Node (node linker). Unknown, with reason
	// NodesUnreachable, while no Node is linked and the linker cannot see the Nodes (the API
	// server of the workload cluster holding them is unreachable).
	NodeLinkedCondition = "NodeLinked"
	// DrainedCondition: the Node has been drained, or draining was skipped (machine controller,
	// during deletion). Its reason says which: Draining, Drained, DrainSkipped or DrainTimeout.
	DrainedCondition = "Drained"
	// DeletingCondition: deletion is in progress; the reason names the step it waits on and the
	// message what it waits for (machine controller).
	DeletingCondition = "Deleting"
	// HealthCheckSucceededCondition: the Machine passed its MachineHealthCheck, or why not and
	// whether it is being remediated (health check controller).
	HealthCheckSucceededCondition = "HealthCheckSucceeded"
	// OwnerRemediatedCondition on a Machine: present, False, once its MachineHealthCheck has
	// judged it unhealthy and asked the MachineSet that owns it to remediate it (health check
	// controller). The set then creates the Machine's replacement and deletes it; the reason tells
	// the set how the replacement counts its slot's remediations (RemediationRequestedReason or
	// RemediationRequestedLineageResetReason).
	OwnerRemediatedCondition = "OwnerRemediated"
	// UpToDateCondition: the Machine matches what it should be (machine controller): its
	// MachineDeployment's (or MachineSet's) current template in every field that needs a new
	// Machine, the MachineClass it was created from is unchanged, and spec.rollout of its
	// deployment does not make it due for replacement. False names what differs. In-place fields
	// (see MachineDeploymentSpec.template) do not count: they are brought in line without a new
	// Machine.
	UpToDateCondition = "UpToDate"

	// UpdatingCondition on a Machine, present once its instance has been updated in place (see
	// MachineDeploymentRollout.inPlace; machine controller): True while an update runs, the reason
	// naming the step (Draining, UpdatingInstance, WaitingForNode, Uncordoning), False once it is
	// done (InPlaceUpdated). An update its MachineSet holds back (maxUnavailable, a disruption
	// budget) has not started: the set's events on the Machine say why.
	UpdatingCondition = "Updating"

	// ScalingUpCondition on a MachineSet: it is creating Machines.
	ScalingUpCondition = "ScalingUp"
	// ScalingDownCondition on a MachineSet: it is deleting Machines.
	ScalingDownCondition = "ScalingDown"
	// FrozenCondition on a MachineSet: it has more Machines than replicas plus surge and stopped
	// creating until it is back within bounds.
	FrozenCondition = "Frozen"
	// AutoscalerBoundsCondition on a MachineSet or MachineDeployment, present while either
	// cluster-autoscaler size annotation is: True when spec.replicas lies within the bounds, False
	// (the reason says which bound) when it does not or when the annotations cannot be read (set
	// and deployment controllers).
	AutoscalerBoundsCondition = "AutoscalerBounds"

	// AvailableCondition on a MachineDeployment: at least replicas minus maxUnavailable Machines are available.
	AvailableCondition = "Available"
	// ProgressingCondition on a MachineDeployment: a rollout is making progress, or not
	// (reason ProgressDeadlineExceeded).
	ProgressingCondition = "Progressing"

	// InstanceInterruptionCondition on a Machine: True while the end of its instance is announced
	// (status.interruption), by the provider or by the interruption-deadline annotation (machine
	// controller). Its MachineSet replaces such a Machine first, then deletes it.
	InstanceInterruptionCondition = "InstanceInterruption"

	// MachinesProvisionedCondition on a MachineSet, present while spec.machineLaunch is set: False,
	// naming the oldest, while a Machine is past its launch timeout without reaching Running.
	MachinesProvisionedCondition = "MachinesProvisioned"

	// RemediationAllowedCondition on a MachineHealthCheck: the number of failing targets
	// (unhealthy, suspect and being remediated) is within maxUnhealthy / unhealthyRange.
	RemediationAllowedCondition = "RemediationAllowed"
	// RetriesExhaustedCondition on a MachineHealthCheck, present when spec.remediation.maxRetries
	// is set: True, naming them, while Machines are kept unremediated because their lineage spent
	// its retries.
	RetriesExhaustedCondition = "RetriesExhausted"
)

// Condition reasons shared by several controllers. Controller packages define the rest.
const (
	// PausedReason: the object or its owner carries the paused annotation.
	PausedReason = "Paused"

	// RemediationRequestedReason (OwnerRemediated=False): the health check asks the Machine's
	// MachineSet to replace it; the replacement continues the Machine's lineage, one remediation
	// more (LineageRetriesAnnotation).
	RemediationRequestedReason = "RemediationRequested"
	// RemediationRequestedLineageResetReason (OwnerRemediated=False): as RemediationRequestedReason,
	// but the Machine had been healthy for its check's minHealthyPeriodSeconds before it failed, or
	// the check keeps no count (no spec.remediation): its lineage starts over, and the replacement
	// counts one remediation.
	RemediationRequestedLineageResetReason = "RemediationRequestedLineageReset"
)
