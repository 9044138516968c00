package machineset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// machineChanged passes Machine creations and deletions, and the updates a set acts on or counts:
// metadata (labels, annotations, owners, deletion), spec (node metadata the set propagates), and
// the status that decides readiness, availability, up-to-dateness and the deletion order. The many other status
// writes of a Machine's life (addresses, provider status, ...) wake no set.
func machineChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, okA := e.ObjectOld.(*v1beta1.Machine)
			b, okB := e.ObjectNew.(*v1beta1.Machine)
			if !okA || !okB {
				return true
			}
			return relevantChange(a, b)
		},
	}
}

func relevantChange(a, b *v1beta1.Machine) bool {
	return a.Generation != b.Generation ||
		!a.DeletionTimestamp.Equal(b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Annotations, b.Annotations) ||
		!equality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences) ||
		a.Status.Phase != b.Status.Phase ||
		(a.Status.NodeRef == nil) != (b.Status.NodeRef == nil) ||
		conditionChanged(a, b, v1beta1.ReadyCondition) ||
		conditionChanged(a, b, v1beta1.NodeLinkedCondition) ||
		conditionChanged(a, b, v1beta1.HealthCheckSucceededCondition) ||
		conditionChanged(a, b, v1beta1.OwnerRemediatedCondition) ||
		conditionChanged(a, b, v1beta1.UpToDateCondition) ||
		!equality.Semantic.DeepEqual(a.Status.Interruption, b.Status.Interruption) ||
		!equality.Semantic.DeepEqual(a.Status.InPlaceUpdate, b.Status.InPlaceUpdate)
}

func conditionChanged(a, b *v1beta1.Machine, t string) bool {
	ca := meta.FindStatusCondition(a.Status.Conditions, t)
	cb := meta.FindStatusCondition(b.Status.Conditions, t)
	if ca == nil || cb == nil {
		return (ca == nil) != (cb == nil)
	}
	return ca.Status != cb.Status || !ca.LastTransitionTime.Equal(&cb.LastTransitionTime)
}

// orphan passes only Machines that no object controls and that are not being deleted: the ones a
// set may adopt.
func orphan() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return metav1.GetControllerOf(o) == nil && o.GetDeletionTimestamp() == nil
	})
}

// setsAdopting maps an orphan Machine to the sets of its namespace whose selector matches it.
func (r *Reconciler) setsAdopting(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1beta1.MachineSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "listing MachineSets to find the ones adopting a Machine", "machine", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		set := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector.AsLabelSelector())
		if err != nil || !r.inScope(set) || !sel.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(set)})
	}
	return reqs
}
