package nodelink

import (
	"context"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// staleNodes remembers the Nodes whose patch failed the optimistic lock, and the machines that
// wait for them. Such a conflict is not retried at once (the cache would still show the stale
// copy); the next event of the Node brings the machines back instead. mapNode drops updates that
// change nothing nodelink reads (a kubelet's status write), and that is exactly what a conflict
// can be about: without this record, a machine whose Node patch lost to a status write would wait
// for an unrelated change of its Node, possibly forever.
type staleNodes struct {
	mu sync.Mutex
	// m is keyed by Node name: the machines waiting for the cache to show a newer version of it,
	// each with the resourceVersion its refused patch was based on.
	m map[string]map[types.NamespacedName]string
}

// add records that machine's patch of node, based on node's resourceVersion, was refused.
func (s *staleNodes) add(node *corev1.Node, machine types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]map[types.NamespacedName]string{}
	}
	if s.m[node.Name] == nil {
		s.m[node.Name] = map[types.NamespacedName]string{}
	}
	s.m[node.Name][machine] = node.ResourceVersion
}

// take returns, in name order, the machines waiting for the Node name whose patches were based on
// another version than node, the cache's copy (nil when the Node is gone), and forgets them.
func (s *staleNodes) take(name string, node *corev1.Node) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.NamespacedName
	for machine, rv := range s.m[name] {
		if node == nil || node.ResourceVersion != rv {
			out = append(out, machine)
			delete(s.m[name], machine)
		}
	}
	if len(s.m[name]) == 0 {
		delete(s.m, name)
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// drop forgets that machine waits for the Node name when the cache's copy of it (node, nil when
// gone) is newer than the one its patch was based on, and reports whether it did.
func (s *staleNodes) drop(name string, node *corev1.Node, machine types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rv, ok := s.m[name][machine]
	if !ok || node != nil && node.ResourceVersion == rv {
		return false
	}
	delete(s.m[name], machine)
	if len(s.m[name]) == 0 {
		delete(s.m, name)
	}
	return true
}

// nodeConflict records that the patch of s.node for s's machine was refused, and reports whether
// the machine must be brought back by its caller now: the cache already shows a newer Node, whose
// event came between the read and the refusal (mapNode may have run before the record).
func (r *reconciler[M]) nodeConflict(ctx context.Context, s *scope[M]) bool {
	r.stale.add(s.node, s.view.Key)
	var cached corev1.Node
	err := r.nodes.GetCache().Get(ctx, client.ObjectKeyFromObject(s.node), &cached)
	switch {
	case err == nil:
		return r.stale.drop(s.node.Name, &cached, s.view.Key)
	case client.IgnoreNotFound(err) == nil:
		return r.stale.drop(s.node.Name, nil, s.view.Key)
	default:
		return false // the Node's next event brings the machine back
	}
}
