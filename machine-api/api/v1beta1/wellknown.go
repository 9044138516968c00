package v1beta1

// Labels and annotations with a meaning to the controllers, the kubectl plugin or the
// cluster-autoscaler. All share the machine.machineapi.dev/ prefix, which is what the autoscaler
// derives from CAPI_GROUP=machine.machineapi.dev.
const (
	// Prefix is the prefix of every well-known key of this group.
	Prefix = "machine.machineapi.dev/"

	// DeleteMachineAnnotation on a Machine marks it to be deleted first when its MachineSet
	// scales down, or its MachineDeployment (whichever of its sets holds it). The
	// cluster-autoscaler sets it on the machine it wants to remove.
	DeleteMachineAnnotation = Prefix + "delete-machine"

	// ExcludeNodeDrainingAnnotation on a Machine skips draining its Node on deletion.
	ExcludeNodeDrainingAnnotation = Prefix + "exclude-node-draining"

	// ExcludeWaitForNodeVolumeDetachAnnotation on a Machine skips waiting for its Node's volumes
	// to detach on deletion.
	ExcludeWaitForNodeVolumeDetachAnnotation = Prefix + "exclude-wait-for-node-volume-detach"

	// PausedAnnotation on any object of this group makes the controllers leave it alone until it
	// is removed. Its value is ignored. The cluster-autoscaler does not know it: to stop the
	// autoscaler too, pause a MachineSet or MachineDeployment with ClusterAPIPausedAnnotation.
	PausedAnnotation = Prefix + "paused"

	// DoNotDisruptAnnotation on a Machine, or on a pod running on its Node, holds the Machine's
	// voluntary disruption: its MachineSet does not delete it for a scale-down, a rollout, an
	// expiry or a health check's remediation (the reasons of spec.disruption), with or without
	// budgets. A pod that is done or deleted holds nothing. Value "true" (or empty) holds until the
	// annotation is removed; a duration such as "2h" holds at most that long, counted from when the
	// set first wanted to delete the Machine. Another value holds, and the hold says the value
	// cannot be read. Involuntary losses and direct deletions are not held.
	DoNotDisruptAnnotation = Prefix + "do-not-disrupt"

	// InterruptionDeadlineAnnotation on a Machine announces, as a cloud announces a spot reclaim,
	// that its instance goes away at this time (RFC 3339, for example 2026-12-03T18:00:00Z): the
	// machine controller records it in status.interruption (reason Manual; the annotation's time
	// wins over the provider's), and the Machine's MachineSet replaces it before then. Removing it
	// withdraws the notice, unless the provider announced one too.
	InterruptionDeadlineAnnotation = Prefix + "interruption-deadline"

	// MachineAnnotation on a Node names the Machine linked to it.
	MachineAnnotation = Prefix + "machine"

	// ClusterNamespaceAnnotation on a Node names the namespace of the Machine linked to it.
	ClusterNamespaceAnnotation = Prefix + "cluster-namespace"

	// AutoscalerMinSizeAnnotation on a MachineSet or MachineDeployment is the smallest replica
	// count the cluster-autoscaler may scale it to.
	AutoscalerMinSizeAnnotation = Prefix + "cluster-api-autoscaler-node-group-min-size"

	// AutoscalerMaxSizeAnnotation on a MachineSet or MachineDeployment is the largest replica
	// count the cluster-autoscaler may scale it to.
	AutoscalerMaxSizeAnnotation = Prefix + "cluster-api-autoscaler-node-group-max-size"

	// SetNameLabel on a Machine names the MachineSet that created it.
	SetNameLabel = Prefix + "set-name"

	// DeploymentNameLabel on a MachineSet or Machine names the MachineDeployment it belongs to.
	// The sets of a deployment also carry ClusterAPIDeploymentNameLabel, for the autoscaler.
	DeploymentNameLabel = Prefix + "deployment-name"

	// RevisionAnnotation on a MachineSet is the MachineDeployment revision its template belongs
	// to; on a MachineDeployment it is the current revision. The sets of a deployment also carry
	// it as ClusterAPIRevisionAnnotation, for the autoscaler.
	RevisionAnnotation = Prefix + "revision"

	// NodeUninitializedTaintKey is the taint (NoSchedule) a Machine's Node registers with, so that
	// it takes no workloads until the node linker has given it the Machine's labels and taints: the
	// linker removes it in the same patch that first applies them, never earlier. A provider's
	// bootstrap registers the kubelet with it (registerWithTaints); the simulated kubelet does too.
	// It equals nodelink.DefaultInitializationTaintKey.
	NodeUninitializedTaintKey = "node.machineapi.dev/uninitialized"

	// OutdatedRevisionTaintKey is the taint (PreferNoSchedule) the Nodes of a MachineDeployment's
	// old MachineSets get while it rolls out a new template, so that pods rescheduled meanwhile
	// prefer the new Nodes; it goes again when a set becomes the current one (a rollout undone).
	OutdatedRevisionTaintKey = "node.machineapi.dev/outdated-revision"

	// RemediateMachineAnnotation on a Machine asks its MachineHealthCheck to remediate it as if
	// it were unhealthy.
	RemediateMachineAnnotation = Prefix + "remediate-machine"

	// LineageAnnotation on a Machine names the lineage (the succession of Machines of one
	// MachineSet slot that replaced each other because a MachineHealthCheck judged them
	// unhealthy) it belongs to: the name of the first Machine of the slot that was remediated. The
	// MachineSet sets it on the replacement it creates.
	LineageAnnotation = Prefix + "lineage"

	// LineageRetriesAnnotation on a Machine is how many times its lineage was remediated before
	// this Machine was created (absent: none). The MachineSet sets it on a replacement when it
	// creates it: one more than on the Machine it replaces, or 1 when the health check said that
	// Machine's lineage starts over (RemediationRequestedLineageResetReason).
	LineageRetriesAnnotation = Prefix + "lineage-retries"

	// LineageRemediatedAtAnnotation on a Machine is when (RFC 3339) its lineage was last
	// remediated: the MachineSet sets it on a replacement when it creates it, from the moment the
	// health check asked for the remediation (the OwnerRemediated condition's lastTransitionTime).
	LineageRemediatedAtAnnotation = Prefix + "lineage-remediated-at"

	// ReplacesAnnotation on a Machine names the remediated Machine of its set whose lineage it
	// took over. It is how a MachineSet restarted between creating a replacement and deleting the
	// Machine it replaces knows that the replacement exists.
	ReplacesAnnotation = Prefix + "replaces"

	// DrainLabel on a Pod overrides every MachineDrainRule for it: DrainSkipValue,
	// DrainWaitCompletedValue, or DrainOrderValuePrefix followed by an order group.
	DrainLabel = Prefix + "drain"
	// DrainSkipValue is the DrainLabel value that skips a pod.
	DrainSkipValue = "skip"
	// DrainWaitCompletedValue is the DrainLabel value that never evicts a pod: the drain waits
	// until it has completed.
	DrainWaitCompletedValue = "wait-completed"
	// DrainOrderValuePrefix followed by a non-negative integer (order-10) is the DrainLabel value
	// that drains a pod in that order group. (A label value cannot hold "=".)
	DrainOrderValuePrefix = "order-"
)

// Cluster API keys that the cluster-autoscaler's clusterapi provider hard-codes: unlike the keys
// above, they do not follow CAPI_GROUP. The controllers write and honour them so that the
// unmodified autoscaler works with this group (see docs/autoscaler.md).
const (
	// ClusterAPIPausedAnnotation on any object of this group pauses the controllers exactly like
	// PausedAnnotation. The cluster-autoscaler honours it too (and only it): a
	// MachineSet or MachineDeployment carrying it is no node group, so it is neither scaled up nor
	// down. Use it to pause a set or deployment the autoscaler manages.
	ClusterAPIPausedAnnotation = "cluster.x-k8s.io/paused"

	// ClusterAPIDeploymentNameLabel on a MachineSet names its MachineDeployment, like
	// DeploymentNameLabel. The deployment controller keeps it on every set it owns: the
	// autoscaler finds a deployment's sets by it.
	ClusterAPIDeploymentNameLabel = "cluster.x-k8s.io/deployment-name"

	// ClusterAPIRevisionAnnotation on a MachineSet is the same revision as RevisionAnnotation; the
	// deployment controller keeps the two equal. The autoscaler tells a deployment's newest set
	// from the old ones by it, and does not scale down a deployment whose old sets still have
	// Machines (a rollout in progress).
	ClusterAPIRevisionAnnotation = "machinedeployment.clusters.x-k8s.io/revision"
)

// The cluster-autoscaler's capacity annotations on a MachineSet or MachineDeployment describe the
// Node a new Machine of it would get, so that the autoscaler can scale it up from zero. The
// machine-manager writes them from the nodeTemplate of the MachineClass the template refers to,
// with server-side apply under its own field manager; one set by hand (by another manager, to
// another value) is left alone.
const (
	// CapacityCPUAnnotation is the Node's CPU capacity, a quantity ("16").
	CapacityCPUAnnotation = "capacity.cluster-autoscaler.kubernetes.io/cpu"
	// CapacityMemoryAnnotation is the Node's memory capacity, a quantity ("64Gi").
	CapacityMemoryAnnotation = "capacity.cluster-autoscaler.kubernetes.io/memory"
	// CapacityEphemeralDiskAnnotation is the Node's ephemeral-storage capacity, a quantity.
	CapacityEphemeralDiskAnnotation = "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk"
	// CapacityMaxPodsAnnotation is how many pods the Node takes, an integer.
	CapacityMaxPodsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/maxPods"
	// CapacityGPUTypeAnnotation is the resource name of the Node's GPUs ("nvidia.com/gpu").
	CapacityGPUTypeAnnotation = "capacity.cluster-autoscaler.kubernetes.io/gpu-type"
	// CapacityGPUCountAnnotation is how many GPUs the Node has, an integer.
	CapacityGPUCountAnnotation = "capacity.cluster-autoscaler.kubernetes.io/gpu-count"
	// CapacityLabelsAnnotation is the Node's labels, "key=value,key2=value2".
	CapacityLabelsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/labels"
	// CapacityTaintsAnnotation is the Node's taints, "key=value:Effect,key2:Effect".
	CapacityTaintsAnnotation = "capacity.cluster-autoscaler.kubernetes.io/taints"
)

// Finalizers the controllers put on objects they must clean up after.
const (
	// MachineFinalizer keeps a Machine until its Node is drained and its instance deleted.
	MachineFinalizer = Prefix + "machine"
	// MachineClassFinalizer keeps a MachineClass while Machines refer to it.
	MachineClassFinalizer = Prefix + "machineclass"
	// MachineSetFinalizer keeps a MachineSet until its Machines are gone.
	MachineSetFinalizer = Prefix + "machineset"
	// MachineDeploymentFinalizer keeps a MachineDeployment until its MachineSets are gone.
	MachineDeploymentFinalizer = Prefix + "machinedeployment"
)

// PausedBy returns the pause annotation that annotations carry: PausedAnnotation, else
// ClusterAPIPausedAnnotation, else "" (not paused). Every controller decides whether an object is
// paused with it (or IsPaused).
func PausedBy(annotations map[string]string) string {
	for _, k := range []string{PausedAnnotation, ClusterAPIPausedAnnotation} {
		if _, ok := annotations[k]; ok {
			return k
		}
	}
	return ""
}

// IsPaused reports whether annotations carry PausedAnnotation or ClusterAPIPausedAnnotation.
func IsPaused(annotations map[string]string) bool {
	return PausedBy(annotations) != ""
}
