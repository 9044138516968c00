package index

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// Field index names.
const (
	// MemberByClusterName indexes MachineDeployments, MachineSets and Machines by the value of
	// their cluster-name label (v1beta1.ClusterNameLabel): a Cluster finds its members without
	// listing its namespace.
	MemberByClusterName = "metadata.labels." + v1beta1.ClusterNameLabel
	// RemoteMachineByCluster indexes the Machines whose Node lives in a workload cluster
	// (v1beta1.HasRemoteNode) by the name of their Cluster: a Cluster's change reaches its
	// deleting Machines without a list-and-loop. Other Machines are not indexed.
	RemoteMachineByCluster = "remotedrain.cluster.machineapi.dev/cluster-name"
)

// Register registers every index of this package with indexer (a manager's field indexer).
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	for _, member := range []client.Object{&machinev1.MachineDeployment{}, &machinev1.MachineSet{}, &machinev1.Machine{}} {
		if err := indexer.IndexField(ctx, member, MemberByClusterName, ClusterName); err != nil {
			return fmt.Errorf("indexing %T by cluster name: %w", member, err)
		}
	}
	if err := indexer.IndexField(ctx, &machinev1.Machine{}, RemoteMachineByCluster, remoteCluster); err != nil {
		return fmt.Errorf("indexing remote Machines by cluster name: %w", err)
	}
	return nil
}

// ClusterName is the MemberByClusterName value of o: the Cluster it belongs to, if any.
func ClusterName(o client.Object) []string {
	if name := o.GetLabels()[v1beta1.ClusterNameLabel]; name != "" {
		return []string{name}
	}
	return nil
}

func remoteCluster(o client.Object) []string {
	if !v1beta1.HasRemoteNode(o.GetLabels()) {
		return nil
	}
	return []string{o.GetLabels()[v1beta1.ClusterNameLabel]}
}
