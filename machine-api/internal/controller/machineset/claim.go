package machineset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
)

// claimMachines finds the set's Machines through the controller index: those it controls, minus
// the ones whose labels no longer match its selector (released: the set stops being their
// controller), plus the orphans that match (adopted: the set becomes their controller). Adoption
// and release are merge patches with optimistic locking, so two sets never both adopt a Machine;
// when one conflicts the steps after this one wait for the Machine's event, so the set never
// counts a Machine it is not sure about.
func (r *Reconciler) claimMachines(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	owned, err := r.listMachines(ctx, s.set.Namespace, string(s.set.UID))
	if err != nil {
		return reconcile.Result{}, false, err
	}
	var errs []error
	var released, adopted []string
	changed := false // a Machine changed under us: count again when its event comes
	for _, m := range owned {
		if !m.DeletionTimestamp.IsZero() || s.selector.Matches(labels.Set(m.Labels)) {
			s.machines = append(s.machines, m)
			continue
		}
		switch err := r.release(ctx, s.set, m); {
		case err == nil || apierrors.IsNotFound(err):
			released = append(released, m.Name)
		case apierrors.IsConflict(err):
			changed = true
			s.machines = append(s.machines, m)
		default:
			errs = append(errs, err)
			s.machines = append(s.machines, m)
		}
	}
	if s.set.DeletionTimestamp.IsZero() {
		orphans, err := r.listMachines(ctx, s.set.Namespace, index.NoController)
		if err != nil {
			return reconcile.Result{}, false, err
		}
		for _, m := range orphans {
			if !m.DeletionTimestamp.IsZero() || !s.selector.Matches(labels.Set(m.Labels)) {
				continue
			}
			switch err := r.adopt(ctx, s.set, m); {
			case err == nil:
				adopted = append(adopted, m.Name)
				s.machines = append(s.machines, m)
			case apierrors.IsConflict(err):
				changed = true
			case apierrors.IsNotFound(err):
			default:
				errs = append(errs, err)
			}
		}
	}
	if len(adopted) > 0 {
		r.Recorder.Eventf(s.set, nil, "Normal", EventAdopted, "Adopt", "adopted %d Machines matching the selector: %s", len(adopted), preview(adopted))
	}
	if len(released) > 0 {
		r.Recorder.Eventf(s.set, nil, "Normal", EventReleased, "Release", "released %d Machines that no longer match the selector: %s", len(released), preview(released))
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, false, err
	}
	return reconcile.Result{}, !changed, nil
}

// listMachines lists the Machines of namespace whose controller is the set with this UID, or
// which have no controller (index.NoController), from the cache.
func (r *Reconciler) listMachines(ctx context.Context, namespace, controller string) ([]*v1beta1.Machine, error) {
	// Every Machine of the set, on every reconcile: read from the cache without copies. The
	// steps never modify them: adopt and release copy a Machine first, syncMetadata patches
	// copies.
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index.MachineBySet: controller},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing machines by controller in namespace %s: %w", namespace, err)
	}
	out := make([]*v1beta1.Machine, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// adopt makes set the controller of the orphan m and gives it the set's labels. m is updated in place.
func (r *Reconciler) adopt(ctx context.Context, set *v1beta1.MachineSet, m *v1beta1.Machine) error {
	*m = *m.DeepCopy() // m shares its maps and slices with the cache (listMachines)
	before := m.DeepCopy()
	m.OwnerReferences = append(m.OwnerReferences, *metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet")))
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for k, v := range ownLabels(set) {
		m.Labels[k] = v
	}
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		*m = *before
		return fmt.Errorf("adopting machine %s: %w", m.Name, err)
	}
	return nil
}

// release removes set as the controller of m, and the set-name label naming it.
func (r *Reconciler) release(ctx context.Context, set *v1beta1.MachineSet, m *v1beta1.Machine) error {
	*m = *m.DeepCopy() // m shares its maps and slices with the cache (listMachines)
	before := m.DeepCopy()
	refs := make([]metav1.OwnerReference, 0, len(m.OwnerReferences))
	for _, ref := range m.OwnerReferences {
		if ref.UID != set.UID {
			refs = append(refs, ref)
		}
	}
	m.OwnerReferences = refs
	if m.Labels[v1beta1.SetNameLabel] == set.Name {
		delete(m.Labels, v1beta1.SetNameLabel)
	}
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		*m = *before
		return fmt.Errorf("releasing machine %s: %w", m.Name, err)
	}
	return nil
}
