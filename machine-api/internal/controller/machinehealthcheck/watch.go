package machinehealthcheck

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// machineEvents enqueues the health checks selecting a Machine. An update is passed on only when
// it changes something a verdict depends on, and a label change enqueues the checks selecting
// the old labels too (so they drop the Machine). A change of one of the Machine's other conditions
// (its type, status or transition time) enqueues only the checks with an
// unhealthyMachineConditions rule on that type: the machine controller's Ready condition changes
// often, and matters to no other check.
func (r *Reconciler) machineEvents() handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			r.enqueue(ctx, q, e.Object.GetNamespace(), e.Object.GetLabels())
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			old, okOld := e.ObjectOld.(*v1beta1.Machine)
			cur, okNew := e.ObjectNew.(*v1beta1.Machine)
			if !okOld || !okNew {
				return
			}
			if !machineChanged(old, cur) {
				if types := changedConditions(old, cur); len(types) > 0 {
					r.enqueueIf(ctx, q, cur.Namespace, cur.Labels, func(mhc *v1beta1.MachineHealthCheck) bool {
						return slices.ContainsFunc(mhc.Spec.UnhealthyMachineConditions, func(c v1beta1.UnhealthyCondition) bool { return types[c.Type] })
					})
				}
				return
			}
			r.enqueue(ctx, q, cur.Namespace, cur.Labels)
			if !labels.Equals(old.Labels, cur.Labels) {
				r.enqueue(ctx, q, old.Namespace, old.Labels)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			r.enqueue(ctx, q, e.Object.GetNamespace(), e.Object.GetLabels())
		},
	}
}

// machineChanged reports whether an update of a Machine can change a health check's verdict on it
// or what the check writes; the machine controller's frequent Ready and lastUpdated writes cannot.
func machineChanged(old, cur *v1beta1.Machine) bool {
	return !labels.Equals(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
		old.Generation != cur.Generation ||
		old.Status.Phase != cur.Status.Phase ||
		!equality.Semantic.DeepEqual(old.Status.NodeRef, cur.Status.NodeRef) ||
		!old.Status.ProvisionedTime.Equal(cur.Status.ProvisionedTime) ||
		!equality.Semantic.DeepEqual(old.Status.FailureMessage, cur.Status.FailureMessage) ||
		!equality.Semantic.DeepEqual(
			meta.FindStatusCondition(old.Status.Conditions, v1beta1.HealthCheckSucceededCondition),
			meta.FindStatusCondition(cur.Status.Conditions, v1beta1.HealthCheckSucceededCondition)) ||
		linkState(old) != linkState(cur)
}

// changedConditions returns the types of the Machine's conditions (other than
// HealthCheckSucceeded, which machineChanged compares) that appeared, disappeared, or changed
// status or transition time: what an unhealthyMachineConditions rule reads. nil when none did.
func changedConditions(old, cur *v1beta1.Machine) map[string]bool {
	var types map[string]bool
	note := func(t string) {
		if types == nil {
			types = map[string]bool{}
		}
		types[t] = true
	}
	for i := range cur.Status.Conditions {
		c := &cur.Status.Conditions[i]
		o := meta.FindStatusCondition(old.Status.Conditions, c.Type)
		if o == nil || o.Status != c.Status || !o.LastTransitionTime.Equal(&c.LastTransitionTime) {
			note(c.Type)
		}
	}
	for i := range old.Status.Conditions {
		if meta.FindStatusCondition(cur.Status.Conditions, old.Status.Conditions[i].Type) == nil {
			note(old.Status.Conditions[i].Type)
		}
	}
	delete(types, v1beta1.HealthCheckSucceededCondition)
	if len(types) == 0 {
		return nil
	}
	return types
}

// linkState is the part of the NodeLinked condition a verdict reads: the linker that sees the
// Node says it was deleted, or that it is linked where this manager cannot see it, or that it
// cannot see the Nodes (NodesUnreachable: the startup timeout is not applied meanwhile).
func linkState(m *v1beta1.Machine) string {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

// nodeHealthChanged passes Node creations and deletions, and updates that change a condition's
// type, status or transition time (or the Node's identity); heartbeats and image lists do not
// matter to a health check.
func nodeHealthChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*corev1.Node)
			cur, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew || old.UID != cur.UID || len(old.Status.Conditions) != len(cur.Status.Conditions) {
				return true
			}
			for i := range cur.Status.Conditions {
				a, b := &old.Status.Conditions[i], &cur.Status.Conditions[i]
				if a.Type != b.Type || a.Status != b.Status || !a.LastTransitionTime.Equal(&b.LastTransitionTime) {
					return true
				}
			}
			return false
		},
	}
}

// checksOfNode maps a Node to the health checks selecting its Machine, found from the Node's
// machine and cluster-namespace annotations, or else through the Machine index by Node name.
func (r *Reconciler) checksOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	ann := o.GetAnnotations()
	if name, ns := ann[v1beta1.MachineAnnotation], ann[v1beta1.ClusterNamespaceAnnotation]; name != "" && ns != "" {
		m := &v1beta1.Machine{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m, client.UnsafeDisableDeepCopy); err == nil {
			return r.checksSelecting(ctx, m.Namespace, m.Labels)
		}
	}
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{index.MachineByNodeName: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing machines by node name", "node", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		reqs = append(reqs, r.checksSelecting(ctx, list.Items[i].Namespace, list.Items[i].Labels)...)
	}
	return reqs
}

func (r *Reconciler) enqueue(ctx context.Context, q queue, namespace string, lbls map[string]string) {
	r.enqueueIf(ctx, q, namespace, lbls, nil)
}

// enqueueIf enqueues the checks selecting lbls in namespace that keep accepts (all when nil).
func (r *Reconciler) enqueueIf(ctx context.Context, q queue, namespace string, lbls map[string]string, keep func(*v1beta1.MachineHealthCheck) bool) {
	for _, req := range r.checksSelectingIf(ctx, namespace, lbls, keep) {
		q.Add(req)
	}
}

// checksSelecting returns the health checks in namespace whose selector matches lbls.
func (r *Reconciler) checksSelecting(ctx context.Context, namespace string, lbls map[string]string) []reconcile.Request {
	return r.checksSelectingIf(ctx, namespace, lbls, nil)
}

// checksSelectingIf returns the health checks in namespace whose selector matches lbls and that
// keep accepts (all when nil). It reads the few checks of one namespace from the cache without
// copying them.
func (r *Reconciler) checksSelectingIf(ctx context.Context, namespace string, lbls map[string]string, keep func(*v1beta1.MachineHealthCheck) bool) []reconcile.Request {
	list := &v1beta1.MachineHealthCheckList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing health checks", "namespace", namespace)
		return nil
	}
	var reqs []reconcile.Request
	set := labels.Set(lbls)
	for i := range list.Items {
		mhc := &list.Items[i]
		if keep != nil && !keep(mhc) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(mhc.Spec.Selector.AsLabelSelector())
		if err != nil || !sel.Matches(set) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mhc)})
	}
	return reqs
}
