package nodelink

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reconciler links one machine (the request) to its Node. Machines are read from the machine
// cluster's cache and written through machineClient; Nodes likewise through the Node cluster and
// nodeClient. Both clients are guarded (package consistency): a reconcile runs only once the
// caches show what the earlier reconciles of its machine wrote.
type reconciler[M client.Object] struct {
	adapter   Adapter[M]
	opts      Options
	keys      annotationKeys
	nodeIndex string // index of Nodes by the machine their annotations name
	machines  cluster.Cluster
	nodes     cluster.Cluster
	recorder  events.EventRecorder
	// machineClient and nodeClient write machines and Nodes, recording each write for the
	// guard of the reconcile that makes it (the linker's own, or a LinkRecorder's).
	machineClient, nodeClient client.Client
	// sight tells whether the Nodes can be seen; nil when they are in the machines' own cluster.
	sight *nodeSight
	// stale remembers the Nodes whose patches failed the optimistic lock (stale.go).
	stale staleNodes
}

// scope is what one reconcile learned about its machine.
type scope[M client.Object] struct {
	machine  M
	view     machineView
	decision decision
	// node is the Node the machine is linked to, as read from the cache; nil when not linked.
	node *corev1.Node
}

// Reconcile links the machine named by req to its Node, keeps that Node's metadata in sync, and
// records the outcome on the machine. A machine that no longer exists releases its Node.
func (r *reconciler[M]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := r.adapter.New()
	if err := r.machines.GetCache().Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.releaseNodes(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, fmt.Errorf("getting machine %s: %w", req.NamespacedName, err)
	}
	if !r.handles(m) || r.opts.Paused != nil && r.opts.Paused(m) {
		return reconcile.Result{}, nil
	}
	s := &scope[M]{machine: m, view: r.machineView(m)}
	if unmatchable(s.view) && r.adapter.LinkCondition(m) == nil {
		// Nothing to match on yet (no providerID, no InternalIP): a condition would only say
		// WaitingForNode. The first write waits for the provider, saving one per machine.
		return reconcile.Result{}, nil
	}
	if err := r.decide(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if r.opts.Recorder != nil {
		r.handOver(s) // the recorder's reconcile writes the Node and the machine (recorder.go)
		return reconcile.Result{}, nil
	}
	if err := r.syncNode(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			// The Node changed since the cache showed it: its next event brings the machine back
			// with fresh data (stale.go). Retrying at once with backoff would only read the same
			// stale cache and fail again (several wasted writes per link at scale). Machine status
			// conflicts are handled in recordStatus.
			if r.nodeConflict(ctx, s) {
				return reconcile.Result{RequeueAfter: retrySoon}, nil
			}
			return reconcile.Result{}, nil
		}
		r.recorder.Eventf(s.machine, nil, corev1.EventTypeWarning, EventNodeMetadataRefused, "LinkNode",
			"%v; until it is applied, Node %s lacks the machine's labels and taints, and keeps the %s taint it registered with (no workloads land on it)", err, s.node.Name, r.keys.Gate)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.recordStatus(ctx, s)
}

// retrySoon is when a reconcile whose Node patch was refused runs again when the cache already
// shows a newer Node: at once, but through the queue (Result.Requeue is deprecated).
const retrySoon = 10 * time.Millisecond

// handles reports whether m is in this linker's scope (Options.Namespace and Options.Selector).
func (r *reconciler[M]) handles(m client.Object) bool {
	if r.opts.Namespace != "" && m.GetNamespace() != r.opts.Namespace {
		return false
	}
	return r.opts.Selector.Matches(labels.Set(m.GetLabels()))
}

// decide finds the machine's Node through the indexes (see matching.go). When none matches while
// the Nodes cannot be seen (sight.go), the machine is reported NodesUnreachable instead of waiting,
// unless it has nothing a Node could be matched by yet anyway.
func (r *reconciler[M]) decide(ctx context.Context, s *scope[M]) error {
	d, err := decide(s.view, cacheLookup[M]{ctx: ctx, r: r})
	if err != nil {
		return fmt.Errorf("matching machine %s to a Node: %w", s.view.Key, err)
	}
	if d.Reason == ReasonWaitingForNode && !unmatchable(s.view) {
		if msg, unseen := r.sight.unseen(); unseen {
			d = decision{Reason: ReasonNodesUnreachable, Message: msg}
		}
	}
	s.decision = d
	if d.Node == nil {
		return nil
	}
	var n corev1.Node
	if err := r.nodes.GetCache().Get(ctx, types.NamespacedName{Name: d.Node.Name}, &n); err != nil {
		return fmt.Errorf("getting Node %s: %w", d.Node.Name, err)
	}
	s.node = &n
	return nil
}

// unmatchable reports whether a machine has nothing a Node could be matched by yet.
func unmatchable(m machineView) bool {
	return m.NodeRef == nil && m.ProviderID == "" && len(m.IPs) == 0
}
