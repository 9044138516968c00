package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/index"
)

// reconcileWorkerPools gives every worker pool its MachineDeployment — created, or updated where
// it differs from the pool (see applyPool) — and deletes the MachineDeployments of pools that are
// no longer in the spec. Only MachineDeployments the Cluster controls are updated or deleted; a
// MachineDeployment with a pool's name that the Cluster does not control is reported, not taken.
// Pools wait for the infrastructure.
func (r *Reconciler) reconcileWorkerPools(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.pools = &poolsState{}
	if !s.provisioned() {
		s.pools.waitingForInfra = true
		return ctrl.Result{}, nil
	}
	c := s.cluster
	owned, err := r.ownedDeployments(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	wanted := map[string]bool{}
	for i := range c.Spec.WorkerPools {
		pool := &c.Spec.WorkerPools[i]
		name := deploymentName(c, pool.Name)
		wanted[name] = true
		if err := r.reconcilePool(ctx, s, pool, owned[name]); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, name := range sortedKeys(owned) {
		md := owned[name]
		if wanted[name] || !md.DeletionTimestamp.IsZero() || md.Labels[v1beta1.WorkerPoolLabel] == "" {
			continue
		}
		if err := r.Client.Delete(ctx, md, client.Preconditions{UID: &md.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting MachineDeployment %s of removed worker pool %s: %w", name, md.Labels[v1beta1.WorkerPoolLabel], err)
		}
		r.Recorder.Eventf(c, md, "Normal", EventPoolDeleted, "DeleteWorkerPool",
			"worker pool %s was removed from the spec: deleting MachineDeployment %s and its machines", md.Labels[v1beta1.WorkerPoolLabel], name)
	}
	return ctrl.Result{}, nil
}

// reconcilePool creates the pool's MachineDeployment, or updates the one the Cluster controls.
func (r *Reconciler) reconcilePool(ctx context.Context, s *scope, pool *v1beta1.WorkerPool, current *machinev1.MachineDeployment) error {
	c := s.cluster
	want := renderDeployment(c, pool)
	if current == nil {
		err := r.Client.Create(ctx, want)
		switch {
		case err == nil:
			s.pools.rendered++
			r.Recorder.Eventf(c, want, "Normal", EventPoolCreated, "CreateWorkerPool",
				"created MachineDeployment %s for worker pool %s with %d replicas", want.Name, pool.Name, *want.Spec.Replicas)
			return nil
		case apierrors.IsAlreadyExists(err):
			return r.explainExisting(ctx, s, want, pool)
		default:
			return fmt.Errorf("creating MachineDeployment %s for worker pool %s: %w", want.Name, pool.Name, err)
		}
	}
	if !current.DeletionTimestamp.IsZero() {
		s.pools.conflicts = append(s.pools.conflicts, fmt.Sprintf("pool %s: MachineDeployment %s is still being deleted; it is created again once it is gone", pool.Name, current.Name))
		return nil
	}
	updated := current.DeepCopy()
	changed := applyPool(updated, want, pool)
	if len(changed) == 0 {
		s.pools.rendered++
		return nil
	}
	err := r.Client.Patch(ctx, updated, client.MergeFromWithOptions(current, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		return fmt.Errorf("updating MachineDeployment %s of worker pool %s (%s): %w", current.Name, pool.Name, strings.Join(changed, ", "), err)
	}
	s.pools.rendered++
	r.Recorder.Eventf(c, updated, "Normal", EventPoolUpdated, "UpdateWorkerPool",
		"updated MachineDeployment %s of worker pool %s: %s", current.Name, pool.Name, strings.Join(changed, ", "))
	return nil
}

// explainExisting handles a pool's MachineDeployment that exists but is not in the cache's list
// of the Cluster's own: either the cache has not caught up with our create (nothing to do), or
// someone else's object has the name (a conflict the user must resolve).
func (r *Reconciler) explainExisting(ctx context.Context, s *scope, want *machinev1.MachineDeployment, pool *v1beta1.WorkerPool) error {
	got := &machinev1.MachineDeployment{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: want.Namespace, Name: want.Name}, got); err != nil {
		return fmt.Errorf("reading MachineDeployment %s of worker pool %s: %w", want.Name, pool.Name, err)
	}
	if metav1.IsControlledBy(got, s.cluster) {
		s.pools.rendered++ // ours: the cache is behind, the next reconcile compares it
		return nil
	}
	s.pools.conflicts = append(s.pools.conflicts, fmt.Sprintf(
		"pool %s: MachineDeployment %s already exists and does not belong to this Cluster; rename the pool or delete that MachineDeployment",
		pool.Name, want.Name))
	return nil
}

// ownedDeployments returns the Cluster's member MachineDeployments that it controls, by name.
func (r *Reconciler) ownedDeployments(ctx context.Context, c *v1beta1.Cluster) (map[string]*machinev1.MachineDeployment, error) {
	list := &machinev1.MachineDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(c.Namespace), client.MatchingFields{index.MemberByClusterName: c.Name}); err != nil {
		return nil, fmt.Errorf("listing the MachineDeployments of cluster %s: %w", c.Name, err)
	}
	owned := map[string]*machinev1.MachineDeployment{}
	for i := range list.Items {
		if md := &list.Items[i]; metav1.IsControlledBy(md, c) {
			owned[md.Name] = md
		}
	}
	return owned, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
