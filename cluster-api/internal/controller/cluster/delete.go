package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// deleteMembers deletes the Cluster's MachineDeployments, then its MachineSets, then its Machines
// — only objects with its cluster-name label in its namespace — and waits until all are gone.
// Each Machine is drained and its instance deleted by the machine controller as usual; each set
// and deployment waits for its Machines behind its finalizer. Deleting the owners first keeps them
// from replacing the Machines being deleted.
func (r *Reconciler) deleteMembers(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	m := s.members
	var objs []client.Object
	for i := range m.deployments {
		objs = append(objs, &m.deployments[i])
	}
	for i := range m.sets {
		objs = append(objs, &m.sets[i])
	}
	for i := range m.machines {
		objs = append(objs, &m.machines[i])
	}
	if len(objs) == 0 {
		return ctrl.Result{}, true, nil
	}
	for _, o := range objs {
		if !o.GetDeletionTimestamp().IsZero() {
			continue
		}
		uid := o.GetUID()
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, false, fmt.Errorf("deleting %s %s of cluster %s: %w", kindOf(o), o.GetName(), s.cluster.Name, err)
		}
	}
	s.deletion = &deletionStep{reason: ReasonDeletingMachines, message: waitingForMembers(m)}
	return ctrl.Result{RequeueAfter: memberPoll}, false, nil
}

// waitingForMembers says what deletion waits for: how many of each kind, and the first machines
// with the step their own deletion is on.
func waitingForMembers(m *members) string {
	var parts []string
	for _, n := range []struct {
		count int
		kind  string
	}{{len(m.machines), "Machine"}, {len(m.sets), "MachineSet"}, {len(m.deployments), "MachineDeployment"}} {
		if n.count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s)", n.count, n.kind))
		}
	}
	msg := "waiting for " + strings.Join(parts, ", ") + " to be deleted"
	names := make([]string, 0, len(m.machines))
	byName := map[string]*machinev1.Machine{}
	for i := range m.machines {
		names = append(names, m.machines[i].Name)
		byName[m.machines[i].Name] = &m.machines[i]
	}
	slices.Sort(names)
	var details []string
	for _, name := range names[:min(len(names), 3)] {
		d := name
		if c := meta.FindStatusCondition(byName[name].Status.Conditions, machinev1.DeletingCondition); c != nil {
			d += ": " + c.Reason
			if c.Message != "" {
				d += " (" + c.Message + ")"
			}
		}
		details = append(details, d)
	}
	if len(details) > 0 {
		msg += "; " + strings.Join(details, "; ")
		if len(names) > len(details) {
			msg += fmt.Sprintf("; and %d more", len(names)-len(details))
		}
	}
	return msg
}

// removeFinalizer lets the Cluster go.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	s.deletion = &deletionStep{reason: ReasonRemovingFinalizer, message: "the machines and the infrastructure are gone"}
	c := s.cluster
	if !controllerutil.ContainsFinalizer(c, v1beta1.ClusterFinalizer) {
		return ctrl.Result{}, true, nil
	}
	updated := c.DeepCopy()
	controllerutil.RemoveFinalizer(updated, v1beta1.ClusterFinalizer)
	if err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, false, client.IgnoreNotFound(fmt.Errorf("removing the finalizer of cluster %s: %w", c.Name, err))
	}
	s.finalizerRemoved = true
	return ctrl.Result{}, true, nil
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *machinev1.MachineDeployment:
		return "MachineDeployment"
	case *machinev1.MachineSet:
		return "MachineSet"
	case *machinev1.Machine:
		return "Machine"
	default:
		return fmt.Sprintf("%T", o)
	}
}
