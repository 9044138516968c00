package machinedeployment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// pruneHistory deletes the oldest old sets beyond spec.revisionHistoryLimit among those that are
// empty: no replicas, no Machines, none being deleted. A set with Machines is never pruned.
func (r *Reconciler) pruneHistory(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	limit := int(ptr.Deref(s.md.Spec.RevisionHistoryLimit, 1))
	var empty []*v1beta1.MachineSet
	for _, o := range s.oldSets {
		if ptr.Deref(o.Spec.Replicas, 1) == 0 && o.Status.Replicas == 0 && o.Status.ObservedGeneration >= o.Generation &&
			!meta.IsStatusConditionTrue(o.Status.Conditions, v1beta1.ScalingDownCondition) {
			empty = append(empty, o)
		}
	}
	if len(empty) <= limit {
		return reconcile.Result{}, true, nil
	}
	slices.SortStableFunc(empty, func(a, b *v1beta1.MachineSet) int {
		return cmp.Compare(revision(a.Annotations), revision(b.Annotations))
	})
	var errs []error
	for _, o := range empty[:len(empty)-limit] {
		errs = append(errs, r.deleteSet(ctx, s, o))
	}
	return reconcile.Result{}, true, errors.Join(errs...)
}

// deleteSet deletes one set; its own finalizer deletes its Machines first.
func (r *Reconciler) deleteSet(ctx context.Context, s *scope, set *v1beta1.MachineSet) error {
	err := r.Client.Delete(ctx, set, client.Preconditions{UID: &set.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting MachineSet %s: %w", set.Name, err)
	}
	r.Recorder.Eventf(s.md, set, "Normal", EventSetDeleted, "Delete", "deleted MachineSet %s (revision %s)", set.Name, set.Annotations[v1beta1.RevisionAnnotation])
	return nil
}

// reconcileDelete deletes every set of a deployment being deleted, and removes the deployment's
// finalizer once they are all gone (each set deletes its Machines first). It never relies on
// garbage collection by owner references.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(s.md, v1beta1.MachineDeploymentFinalizer) {
		s.finalizerRemoved = true
		return reconcile.Result{}, nil
	}
	var errs []error
	for _, set := range s.sets {
		errs = append(errs, r.deleteSet(ctx, s, set))
	}
	if err := errors.Join(errs...); err != nil || len(s.sets) > 0 || s.deleting > 0 {
		return reconcile.Result{}, err // the sets' deletion events bring the deployment back
	}
	before := s.md.DeepCopy()
	controllerutil.RemoveFinalizer(s.md, v1beta1.MachineDeploymentFinalizer)
	if err := r.Client.Patch(ctx, s.md, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing the finalizer of MachineDeployment %s/%s: %w", s.md.Namespace, s.md.Name, err)
	}
	s.finalizerRemoved = true
	return reconcile.Result{}, nil
}
