package cluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	"machineapi.dev/cluster-api/internal/index"
)

// observeMembers lists the Cluster's MachineDeployments, MachineSets and Machines, for the counts
// and for deletion.
func (r *Reconciler) observeMembers(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := &members{}
	opts := []client.ListOption{client.InNamespace(s.cluster.Namespace), client.MatchingFields{index.MemberByClusterName: s.cluster.Name}}
	mds := &machinev1.MachineDeploymentList{}
	if err := r.Client.List(ctx, mds, opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the MachineDeployments of cluster %s: %w", s.cluster.Name, err)
	}
	sets := &machinev1.MachineSetList{}
	if err := r.Client.List(ctx, sets, opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the MachineSets of cluster %s: %w", s.cluster.Name, err)
	}
	machines := &machinev1.MachineList{}
	if err := r.Client.List(ctx, machines, opts...); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the Machines of cluster %s: %w", s.cluster.Name, err)
	}
	m.deployments, m.sets, m.machines = mds.Items, sets.Items, machines.Items
	s.members = m
	return ctrl.Result{}, nil
}
