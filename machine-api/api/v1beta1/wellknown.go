package v1beta1

// Labels and annotations with a meaning to the controllers, the kubectl plugin or the
// cluster-autoscaler. All share the machine.machineapi.dev/ prefix, which is what the autoscaler
// derives from CAPI_GROUP=machine.machineapi.dev.
const (
	// Prefix is the prefix of every well-known key of this group.
	Prefix = "machine.machineapi.dev/"

	// DeleteMachineAnnotation on a Machine marks it to be deleted first when its MachineSet
	// scales down. The cluster-autoscaler sets it on the machine it wants to remove.
	DeleteMachineAnnotation = Prefix + "delete-machine"

	// ExcludeNodeDrainingAnnotation on a Machine skips draining its Node on deletion.
	ExcludeNodeDrainingAnnotation = Prefix + "exclude-node-draining"

	// PausedAnnotation on any object of this group makes the controllers leave it alone until it
	// is removed. Its value is ignored.
	PausedAnnotation = Prefix + "paused"

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
	DeploymentNameLabel = Prefix + "deployment-name"

	// RevisionAnnotation on a MachineSet is the MachineDeployment revision its template belongs
	// to; on a MachineDeployment it is the current revision.
	RevisionAnnotation = Prefix + "revision"

	// RemediateMachineAnnotation on a Machine asks its MachineHealthCheck to remediate it as if
	// it were unhealthy.
	RemediateMachineAnnotation = Prefix + "remediate-machine"

	// DrainLabel on a Pod with the value DrainSkipValue keeps the drain from evicting it.
	DrainLabel = Prefix + "drain"
	// DrainSkipValue is the DrainLabel value that skips a pod.
	DrainSkipValue = "skip"
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

// IsPaused reports whether annotations carry PausedAnnotation.
func IsPaused(annotations map[string]string) bool {
	_, ok := annotations[PausedAnnotation]
	return ok
}
