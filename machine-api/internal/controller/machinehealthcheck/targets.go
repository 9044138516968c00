package machinehealthcheck

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// selectTargets reads the check's Machines, and each one's Node, from the cache. Both reads skip
// the deep copy: the objects are shared with the cache and never modified (writes copy them). The
// cache shows every verdict this controller wrote (the consistency guard runs the reconcile only
// then).
func (r *Reconciler) selectTargets(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.mhc.Spec.Selector.AsLabelSelector())
	if err != nil {
		s.invalid = fmt.Errorf("spec.selector: %w", err)
		return ctrl.Result{}, false, reconcile.TerminalError(fmt.Errorf("health check %s: %w", client.ObjectKeyFromObject(s.mhc), s.invalid))
	}
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(s.mhc.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, false, fmt.Errorf("listing the machines of health check %s: %w", client.ObjectKeyFromObject(s.mhc), err)
	}
	s.targets = make([]target, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		s.targets[i].machine = m
		ref := m.Status.NodeRef
		if ref == nil {
			continue
		}
		node := &corev1.Node{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, node, client.UnsafeDisableDeepCopy)
		switch {
		case apierrors.IsNotFound(err):
			s.targets[i].nodeMissing = true
		case err != nil:
			return ctrl.Result{}, false, fmt.Errorf("getting Node %s of machine %s: %w", ref.Name, client.ObjectKeyFromObject(m), err)
		case ref.UID != "" && node.UID != ref.UID:
			s.targets[i].nodeMissing = true // a different Node now has that name
		default:
			s.targets[i].node = node
		}
	}
	return ctrl.Result{}, true, nil
}
