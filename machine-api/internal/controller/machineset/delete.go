package machineset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// reconcileDelete deletes every Machine of a set being deleted, and removes the set's finalizer
// once they are all gone (each is drained and its instance removed by the machine controller). It
// never relies on garbage collection by owner references.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(s.set, v1beta1.MachineSetFinalizer) {
		s.finalizerRemoved = true
		return reconcile.Result{}, nil
	}
	var alive []*v1beta1.Machine
	for _, m := range s.machines {
		if m.DeletionTimestamp.IsZero() {
			alive = append(alive, m)
		}
	}
	if len(alive) > 0 {
		return reconcile.Result{}, r.deleteMachines(ctx, s, alive, EventDeleted, "deleting %d Machines")
	}
	if len(s.machines) > 0 {
		return reconcile.Result{}, nil // the Machines' deletion events bring the set back
	}
	before := s.set.DeepCopy()
	controllerutil.RemoveFinalizer(s.set, v1beta1.MachineSetFinalizer)
	if err := r.Client.Patch(ctx, s.set, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing the finalizer of MachineSet %s/%s: %w", s.set.Namespace, s.set.Name, err)
	}
	s.finalizerRemoved = true
	return reconcile.Result{}, nil
}
