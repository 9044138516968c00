package nodelink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"
)

// Linker links machines of one kind to Nodes. Build it with NewLinker or NewRemoteLinker and run
// it with Start, or let Setup add it to a manager. A Linker runs once: after Start returns, build
// a new one (indexes are shared, so that is cheap).
type Linker[M client.Object] struct {
	r          *reconciler[M]
	ctrl       controller.Controller
	ownedNodes cluster.Cluster // started and stopped by Start; nil when the caller runs the Node cluster
	probe      *prober
	started    atomic.Bool
}

var _ manager.LeaderElectionRunnable = &Linker[client.Object]{}

// Setup adds to mgr a linker for the machines in mgr's cluster and the Nodes of nodes. nodes is
// either mgr itself (Nodes in the same cluster) or a cluster.Cluster for another API server that
// the caller has added to mgr (mgr.Add(nodes)), so that it starts with the manager. The linker runs
// when mgr is leader. The Node cache must hold every Node (no label or field selector on Nodes): a
// linked Node missing from it would be reported deleted.
func Setup[M client.Object](ctx context.Context, mgr manager.Manager, nodes cluster.Cluster, adapter Adapter[M], opts Options) error {
	l, err := NewLinker(ctx, mgr, nodes, adapter, opts)
	if err != nil {
		return err
	}
	if err := mgr.Add(l); err != nil {
		return fmt.Errorf("adding linker %s to the manager: %w", l.r.opts.Name, err)
	}
	return nil
}

// NewLinker builds a linker for the machines of the machines cluster (typically the manager) and
// the Nodes of the nodes cluster, and registers its field indexes on both caches. It does not
// start nodes: the caller runs it (or nodes is the manager). Run the linker with Start. When
// nodes is another API server than machines', unlinked machines are reported
// NodeLinked=Unknown/NodesUnreachable while it is out of sight (see NewRemoteLinker).
func NewLinker[M client.Object](ctx context.Context, machines, nodes cluster.Cluster, adapter Adapter[M], opts Options) (*Linker[M], error) {
	return newLinker(ctx, machines, nodes, nil, adapter, opts)
}

// NewRemoteLinker builds a linker for the machines of the machines cluster and the Nodes of the
// API server nodeConfig points to, typically a workload cluster. The linker owns the Node-side
// cache it creates (Nodes only, without managed fields and image lists): Start starts it and
// stops it when its context is cancelled. Building it makes no request to that API server (the
// Node API's mapping is given, not discovered), so a linker can be built while the server is down,
// for example by a controller restarting during its outage: it reports the outage (Reachability),
// and its Start waits for the Node cache up to Options.CacheSyncTimeout. Use Options.Selector to restrict the linker to that
// cluster's machines, and Options.OnReachabilityChange or Reachability to learn when its API
// server is unreachable; meanwhile, and until its Node cache has caught up after it answers
// again, the machines no Node matches are reported NodeLinked=Unknown/NodesUnreachable. A
// controller that runs one linker per Cluster object does, when the
// Cluster gets a kubeconfig:
//
//	l, err := nodelink.NewRemoteLinker(ctx, mgr, workloadConfig, adapter, nodelink.Options{
//		Name: "nodelink-" + cluster.Namespace + "-" + cluster.Name,
//		Selector: labels.SelectorFromSet(labels.Set{"cluster.machineapi.dev/cluster-name": cluster.Name}),
//		Namespace: cluster.Namespace,
//		OnReachabilityChange: func(r nodelink.Reachability) { notify <- event.GenericEvent{Object: cluster} },
//	})
//	linkCtx, stop := context.WithCancel(ctx) // keep stop with the Cluster; call it on deletion
//	go func() { err := l.Start(linkCtx) /* record err */ }()
func NewRemoteLinker[M client.Object](ctx context.Context, machines cluster.Cluster, nodeConfig *rest.Config, adapter Adapter[M], opts Options) (*Linker[M], error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	nodes, err := cluster.New(nodeConfig, func(o *cluster.Options) {
		o.Scheme = scheme
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return nodeMapper(), nil }
		o.Cache.DefaultTransform = trimNode
		if opts.Logger.GetSink() != nil {
			o.Logger = opts.Logger
		}
	})
	if err != nil {
		return nil, fmt.Errorf("creating the Node-side cluster for %s: %w", nodeConfig.Host, err)
	}
	return newLinker(ctx, machines, nodes, nodes, adapter, opts)
}

func newLinker[M client.Object](ctx context.Context, machines, nodes, owned cluster.Cluster, adapter Adapter[M], opts Options) (*Linker[M], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = ctrllog.Log.WithName(opts.Name)
	}
	keys := keysFor(opts.AnnotationPrefix, opts.InitializationTaintKey)
	r := &reconciler[M]{
		adapter:   adapter,
		opts:      opts,
		keys:      keys,
		nodeIndex: indexNodeMachinePrefix + opts.AnnotationPrefix,
		machines:  machines,
		nodes:     nodes,
		recorder:  machines.GetEventRecorder(opts.Name),
		// Machines are read from the cache as the adapter has them (unstructured ones too).
		machineClient: consistency.NewClient(machines.GetClient(), consistency.ClientOptions{
			Cache: machines.GetCache(), APIReader: machines.GetAPIReader(), Unstructured: true}),
		nodeClient: consistency.NewClient(nodes.GetClient(), consistency.ClientOptions{
			Cache: nodes.GetCache(), APIReader: nodes.GetAPIReader()}),
	}
	if err := indexMachines(ctx, machines.GetFieldIndexer(), adapter); err != nil {
		return nil, err
	}
	if err := indexNodes(ctx, nodes.GetFieldIndexer(), keys, r.nodeIndex); err != nil {
		return nil, err
	}
	// Every linker of a process (one per workload cluster in cluster-manager) is "nodelink" in the
	// guard's metric.
	guard := consistency.New(consistency.Options{Controller: "nodelink", Clock: opts.Clock})
	copts := controller.Options{
		Reconciler:              guard.Reconciler(r),
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		CacheSyncTimeout:        opts.CacheSyncTimeout,
		Logger:                  opts.Logger,
		// Controller names are registered for the life of the process; a remote linker
		// stopped and started again with its cluster reuses its name.
		SkipNameValidation: ptr.To(true),
	}
	if mgr, ok := machines.(manager.Manager); ok {
		copts.DefaultFromConfig(mgr.GetControllerOptions())
	}
	c, err := controller.NewUnmanaged(opts.Name, copts)
	if err != nil {
		return nil, fmt.Errorf("creating controller %s: %w", opts.Name, err)
	}
	if err := c.Watch(&informerSource{cache: machines.GetCache(), obj: adapter.New(), mapper: r.mapMachine}); err != nil {
		return nil, err
	}
	if err := c.Watch(&informerSource{cache: nodes.GetCache(), obj: &corev1.Node{}, mapper: r.mapNode}); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(nodes.GetConfig(), nodes.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the Node-side reachability probe: %w", err)
	}
	probe := newProber(disc.RESTClient(), opts)
	if nodes.GetConfig().Host != machines.GetConfig().Host {
		// With one API server for both, a reconcile that reads and writes machines proves that
		// it answers: only Nodes behind another one can be out of sight (sight.go).
		if err := r.watchSight(c, nodes, probe); err != nil {
			return nil, err
		}
	}
	return &Linker[M]{
		r:          r,
		ctrl:       c,
		ownedNodes: owned,
		probe:      probe,
	}, nil
}

// Start links machines to Nodes until ctx is cancelled, then stops everything it started (the
// controller, the reachability probe, and a remote linker's Node cache) and returns nil. It
// returns an error when the caches do not sync within Options.CacheSyncTimeout or the Node-side
// cache fails to start.
func (l *Linker[M]) Start(ctx context.Context) error {
	if !l.started.CompareAndSwap(false, true) {
		return errors.New("nodelink: a Linker runs once; build a new one")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	nodesErr := make(chan error, 1)
	if l.ownedNodes != nil {
		wg.Go(func() {
			if err := l.ownedNodes.Start(ctx); err != nil {
				nodesErr <- fmt.Errorf("running the Node-side cache of %s: %w", l.r.opts.Name, err)
				cancel()
			}
		})
	}
	wg.Go(func() { l.probe.run(ctx) })
	err := l.ctrl.Start(ctx)
	cancel()
	wg.Wait()
	if err == nil {
		select {
		case err = <-nodesErr:
		default:
		}
	}
	return err
}

// NeedLeaderElection is true: only the leader links.
func (l *Linker[M]) NeedLeaderElection() bool { return true }

// Reachability reports whether the Node side's API server answered the last probe.
func (l *Linker[M]) Reachability() Reachability { return l.probe.get() }

// nodeMapper maps the one kind a remote linker's Node-side cluster reads, v1 Node, which every
// API server serves. controller-runtime's default mapper discovers the API from the server when
// the cache first needs a mapping (when the linker registers its Node indexes), which fails while
// the server is down.
func nodeMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	return m
}

// trimNode drops what nodelink never reads from cached Nodes (managed fields, image lists), to
// keep a workload cluster's Node cache small.
func trimNode(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}

var _ reconcile.Reconciler = &reconciler[client.Object]{}
