package nodelink

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// nodeSight tells a linker whose Nodes live behind another API server whether "no Node matches"
// can be believed. It cannot while that API server does not answer the reachability probe, and,
// after such an outage, not until the Node cache has caught up with the server: client-go's watch
// reconnects with a backoff of up to a minute, so the probe sees the server back well before the
// cache shows the Nodes that registered meanwhile, and a machine reported WaitingForNode in that
// window could be remediated for a Node that is there. Until then unlinked machines get
// NodeLinked=Unknown/NodesUnreachable instead of WaitingForNode.
//
// Caught up means that the Node informer's last synced resourceVersion has reached the Nodes'
// resourceVersion the API server reported once it answered again (resourceVersions of one
// resource are comparable integers, see k8s.io/apimachinery/pkg/util/resourceversion). The
// informer gets there with the first Node change or watch bookmark after that (the API server
// sends one about every minute), or with a relist. A cache that cannot tell (an informer without
// LastSyncResourceVersion, or resourceVersions that are not integers) counts as caught up, so
// nothing waits on it forever. The check runs after every probe while the Nodes cannot be seen: it is paced by the
// probe, with no timer of its own.
type nodeSight struct {
	host string
	// cacheRV returns the Node cache's last synced resourceVersion ("" before its first list), and
	// false when the cache cannot tell.
	cacheRV func(context.Context) (string, bool)
	// serverRV returns the API server's current resourceVersion of the Node collection.
	serverRV func(context.Context) (string, error)
	// changed is called, on the probe's goroutine and without blocking, when what unseen reports
	// may have changed.
	changed func()
	log     logr.Logger

	// target is the resourceVersion the Node cache must reach; "" until read after an outage.
	// Only the probe's goroutine touches it.
	target string

	mu    sync.Mutex
	reach Reachability // the last probe's
	blind bool         // the Nodes cannot be seen
}

// observe takes the result of one probe (called after every probe, on the probe's goroutine).
func (s *nodeSight) observe(ctx context.Context, r Reachability) {
	s.mu.Lock()
	wasBlind, wasReachable := s.blind, s.reach.Reachable
	s.mu.Unlock()
	blind := wasBlind
	switch {
	case !r.Reachable:
		blind, s.target = true, ""
	case wasBlind:
		blind = !s.caughtUp(ctx)
	}
	s.mu.Lock()
	s.reach, s.blind = r, blind
	s.mu.Unlock()
	switch {
	case blind && !wasBlind:
		s.log.Info("Node-side API server unreachable: unlinked machines are reported NodesUnreachable until the Node cache has caught up with it")
	case !blind && wasBlind:
		s.log.Info("the Node cache has caught up with the Node-side API server: unlinked machines are matched again")
	}
	if blind != wasBlind || r.Reachable != wasReachable {
		s.changed()
	}
}

// caughtUp reports whether the Node cache has caught up with the API server since it answered
// again.
func (s *nodeSight) caughtUp(ctx context.Context) bool {
	if s.target == "" {
		rv, err := s.serverRV(ctx)
		if err != nil {
			s.log.Info("reading the Nodes' resourceVersion from the Node-side API server, to know when the Node cache has caught up; trying again after the next probe", "error", err.Error())
			return false
		}
		s.target = rv
	}
	rv, ok := s.cacheRV(ctx)
	if !ok {
		return true
	}
	if rv == "" {
		return false // the cache has not listed the Nodes yet
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, s.target)
	if err != nil {
		s.log.Info("cannot compare the Node cache's resourceVersion with the API server's: taking the cache as caught up", "error", err.Error())
		return true
	}
	return cmp >= 0
}

// unseen returns why the Nodes cannot be seen, as the NodeLinked message of a machine that no
// Node matches, and false when they can (always for a nil nodeSight: a linker whose Nodes are in
// the machines' own cluster).
func (s *nodeSight) unseen() (string, bool) {
	if s == nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.blind {
		return "", false
	}
	since := s.reach.Since.UTC().Format(time.RFC3339)
	if !s.reach.Reachable {
		return fmt.Sprintf("the Node side's API server %s has not answered since %s (%v): a Node that registered meanwhile cannot be seen; waiting for it to answer",
			s.host, since, s.reach.Err), true
	}
	return fmt.Sprintf("the Node side's API server %s answers again since %s, but the Node cache has not caught up with it yet: a Node that registered meanwhile cannot be seen; waiting for it",
		s.host, since), true
}

// watchSight makes the linker tell unlinked machines when its Nodes are out of sight: a nodeSight
// follows the probe, and its changes reach the controller through a channel source, whose handler
// enqueues the machines concerned (mapSight).
func (r *reconciler[M]) watchSight(c controller.Controller, nodes cluster.Cluster, probe *prober) error {
	changes := make(chan event.TypedGenericEvent[struct{}], 1)
	r.sight = &nodeSight{
		host:     nodes.GetConfig().Host,
		cacheRV:  informerRV(nodes.GetCache()),
		serverRV: serverNodesRV(nodes.GetAPIReader()),
		changed: func() {
			select {
			case changes <- event.TypedGenericEvent[struct{}]{}:
			default: // one is pending: handling it enqueues the same machines, which read the latest state
			}
		},
		log: r.opts.Logger,
	}
	probe.afterProbe = r.sight.observe
	enqueue := handler.TypedFuncs[struct{}, reconcile.Request]{
		GenericFunc: func(ctx context.Context, _ event.TypedGenericEvent[struct{}], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range r.mapSight(ctx) {
				q.Add(req)
			}
		},
	}
	return c.Watch(source.TypedChannel(changes, enqueue))
}

// informerRV returns the last synced resourceVersion of the Node informer of c.
func informerRV(c cache.Cache) func(context.Context) (string, bool) {
	return func(ctx context.Context) (string, bool) {
		inf, err := c.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false))
		if err != nil {
			return "", false
		}
		v, ok := inf.(interface{ LastSyncResourceVersion() string })
		if !ok {
			return "", false
		}
		return v.LastSyncResourceVersion(), true
	}
}

// serverNodesRV returns the current resourceVersion of the Node collection, read from the API
// server with a one-item list of metadata (a consistent read: resourceVersion unset).
func serverNodesRV(r client.Reader) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
		if err := r.List(ctx, list, client.Limit(1)); err != nil {
			return "", err
		}
		return list.ResourceVersion, nil
	}
}

// mapSight maps a change of what the linker can see to the machines whose NodeLinked condition
// depends on it: those waiting for a Node (they become NodesUnreachable) and those reported
// NodesUnreachable (they are matched again, or their message changes). Both are found through the
// machine index by NodeLinked reason, within the linker's namespace and selector.
func (r *reconciler[M]) mapSight(ctx context.Context) []reconcile.Request {
	var reqs requests
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: r.opts.Selector}}
	if r.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(r.opts.Namespace))
	}
	for _, reason := range []string{ReasonWaitingForNode, ReasonNodesUnreachable} {
		ms, err := r.listMachines(ctx, indexMachineLinkReason, reason, opts...)
		if err != nil {
			r.opts.Logger.Error(err, "mapping a change of the Node side's reachability to machines")
		}
		for _, m := range ms {
			reqs.addIf(r.handles(m), client.ObjectKeyFromObject(m))
		}
	}
	return reqs.list
}
