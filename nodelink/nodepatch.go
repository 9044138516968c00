package nodelink

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncNode makes the linked Node carry the machine's annotations and desired metadata. Linking a
// new Node claims it: the optimistic lock on this patch is what keeps two machines from linking
// the same Node when caches lag, so it runs before the machine's status is recorded.
func (r *reconciler[M]) syncNode(ctx context.Context, s *scope[M]) error {
	if s.node == nil {
		return nil
	}
	return r.patchNode(ctx, s.node, r.nodeWant(s))
}

// nodeWant returns the metadata s's linked Node must carry (s.node is not nil).
func (r *reconciler[M]) nodeWant(s *scope[M]) nodeMeta {
	return applyMachine(metaOf(s.node), r.adapter.NodeMetadata(s.machine), s.view.Key, r.keys, metav1.NewTime(r.opts.Clock.Now()))
}

// releaseNodes removes what a deleted machine owned from the Nodes whose annotations name it.
// A machine that the API server still has (out of this linker's scope, or not yet in its cache)
// is not deleted: its Nodes are left alone.
func (r *reconciler[M]) releaseNodes(ctx context.Context, key types.NamespacedName) error {
	if r.opts.Namespace != "" && key.Namespace != r.opts.Namespace {
		return nil
	}
	var nodes corev1.NodeList
	if err := r.nodes.GetCache().List(ctx, &nodes, client.MatchingFields{r.nodeIndex: key.String()}); err != nil {
		return fmt.Errorf("listing the Nodes of deleted machine %s: %w", key, err)
	}
	if len(nodes.Items) == 0 {
		return nil
	}
	exists, err := r.machineExists(ctx, key)
	if err != nil || exists {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if err := r.patchNode(ctx, n, releaseMachine(metaOf(n), r.keys)); err != nil {
			return fmt.Errorf("releasing Node %s of deleted machine %s: %w", n.Name, key, err)
		}
		r.opts.Logger.Info("Released Node of deleted machine", "node", n.Name, "machine", key)
	}
	return nil
}

// patchNode writes want onto n with one merge patch guarded by n's resourceVersion, and writes
// nothing when n already carries want.
func (r *reconciler[M]) patchNode(ctx context.Context, n *corev1.Node, want nodeMeta) error {
	if equality.Semantic.DeepEqual(metaOf(n), want) {
		return nil
	}
	patched := n.DeepCopy()
	patched.Labels, patched.Annotations, patched.Spec.Taints = want.Labels, want.Annotations, want.Taints
	if err := r.nodeClient.Patch(ctx, patched, client.MergeFromWithOptions(n, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching Node %s: %w", n.Name, err)
	}
	return nil
}

func metaOf(n *corev1.Node) nodeMeta {
	return nodeMeta{Labels: n.Labels, Annotations: n.Annotations, Taints: n.Spec.Taints}
}
