package machine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// observeNode reads the Node the node linker linked to the Machine, if any (the link this
// reconcile records, or the one recorded). A Node that is not here while the link is reported
// healthy lives in another cluster (see scope.nodeElsewhere).
func (r *Reconciler) observeNode(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	ref := s.machine.Status.NodeRef
	linked := meta.IsStatusConditionTrue(s.machine.Status.Conditions, v1beta1.NodeLinkedCondition)
	if l := s.link; l != nil {
		if l.NodeRef != nil {
			ref = &v1beta1.NodeReference{Name: l.NodeRef.Name, UID: l.NodeRef.UID}
		}
		linked = l.Condition.Status == metav1.ConditionTrue
	}
	if ref == nil {
		return reconcile.Result{}, true, nil
	}
	node := &corev1.Node{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: ref.Name}, node)
	switch {
	case apierrors.IsNotFound(err) && linked:
		s.nodeElsewhere = true
	case apierrors.IsNotFound(err):
		s.nodeMissing = true
	case err != nil:
		return reconcile.Result{}, false, fmt.Errorf("getting Node %s of machine %s: %w", ref.Name, s.machine.Name, err)
	case ref.UID != "" && node.UID != ref.UID:
		s.nodeMissing = true // a different Node now has that name
	default:
		s.node = node
	}
	return reconcile.Result{}, true, nil
}
