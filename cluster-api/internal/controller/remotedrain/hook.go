package remotedrain

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// hold adds the drain hook to a live remote Machine that lacks it.
func (r *Reconciler) hold(ctx context.Context, m *machinev1.Machine) error {
	if !needsHold(m) {
		return nil
	}
	hooks := append(slices.Clone(m.Spec.LifecycleHooks.PreDrain), machinev1.LifecycleHook{Name: v1beta1.DrainHookName, Owner: v1beta1.DrainHookOwner})
	applied, err := r.patchHooks(ctx, m, hooks)
	if err != nil {
		return fmt.Errorf("adding the preDrain hook %s to machine %s: %w", v1beta1.DrainHookName, client.ObjectKeyFromObject(m), err)
	}
	if applied {
		ctrl.LoggerFrom(ctx).V(1).Info("added the preDrain hook", "hook", v1beta1.DrainHookName)
	}
	return nil
}

// release removes the drain hook and records why, for the condition and the event. It stops the
// pipeline.
func (r *Reconciler) release(ctx context.Context, s *scope, eventType, reason, msg string) (ctrl.Result, bool, error) {
	applied, err := r.patchHooks(ctx, s.machine, withoutDrainHook(s.machine.Spec.LifecycleHooks.PreDrain))
	if err != nil {
		return ctrl.Result{}, false, fmt.Errorf("removing the preDrain hook %s from machine %s (%s): %w", v1beta1.DrainHookName, client.ObjectKeyFromObject(s.machine), msg, err)
	}
	if !applied {
		return ctrl.Result{}, false, nil // the Machine is gone
	}
	s.outcome = &outcome{released: true, eventType: eventType, reason: reason, message: msg}
	return ctrl.Result{}, false, nil
}

// patchHooks sets m's preDrain hooks with a merge patch that has m's resourceVersion as
// precondition: a merge patch replaces the whole list, so without it a hook added by someone else
// since m was read would be lost. A conflict is returned, for Reconcile's write.RequeueOnConflict
// (the Machine is read again shortly); a Machine gone is not an error (applied is false).
func (r *Reconciler) patchHooks(ctx context.Context, m *machinev1.Machine, hooks []machinev1.LifecycleHook) (applied bool, err error) {
	patched := m.DeepCopy()
	patched.Spec.LifecycleHooks.PreDrain = hooks
	err = r.Client.Patch(ctx, patched, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	*m = *patched
	return true, nil
}
