// Package membership answers "which Cluster does this belong to?" for Machines, MachineSets and
// MachineDeployments. Membership is the cluster.machineapi.dev/cluster-name label naming a Cluster
// in the object's own namespace; it is optional, and machine-api never needs it.
//
// A machine provider that wants cluster-wide settings calls ClusterOf with the Machine it was
// given, and treats ErrNoCluster as "this machine is on its own":
//
//	cl, err := membership.ClusterOf(ctx, reader, machine)
//	switch {
//	case errors.Is(err, membership.ErrNoCluster):
//		// a standalone machine: use the machine's own providerSpec only
//	case err != nil:
//		return err // includes ErrClusterNotFound: the label names a Cluster that does not exist
//	}
//
// The reader needs get on clusters.cluster.machineapi.dev in the Machine's namespace.
package membership
