package manager

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"machineapi.dev/drain"
	"machineapi.dev/nodelink/consistency"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/statemetrics"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/controller/cluster"
	"machineapi.dev/cluster-api/internal/controller/remotedrain"
	"machineapi.dev/cluster-api/internal/index"
	"machineapi.dev/cluster-api/internal/remotelink"
	"machineapi.dev/cluster-api/provider"
)

// Scheme returns a scheme with the Kubernetes built-in types, machine.machineapi.dev/v1beta1 and
// cluster.machineapi.dev/v1beta1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, machinev1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Run starts the manager for cluster provider p with the client configuration of --kubeconfig (or
// the in-cluster one) and blocks until ctx is cancelled.
func Run(ctx context.Context, p provider.Provider, o Options) error {
	return o.Options.Run(ctx, "cluster-manager", func(ctx context.Context, cfg *rest.Config) (ctrl.Manager, error) {
		return New(ctx, cfg, p, o)
	}, "namespace", o.Namespace)
}

// New builds a manager running the Cluster controller around cluster provider p, and the remote
// drain controller. Start it with mgr.Start.
func New(ctx context.Context, cfg *rest.Config, p provider.Provider, o Options) (ctrl.Manager, error) {
	if p == nil {
		return nil, errors.New("manager: a cluster provider is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	mgr, err := o.NewManager(o.RESTConfig(cfg), ctrl.Options{
		Scheme: Scheme(),
		Cache:  cacheOptions(o),
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return nil, err
	}
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	// Both controllers write through one guarded client and run behind a consistency guard of their
	// own: a reconcile acts only once the cache shows what the earlier reconciles of its object
	// wrote (package consistency; the remote node linkers guard themselves the same way). Secrets
	// are read from the API server, never awaited in the cache.
	guarded := consistency.NewClient(mgr.GetClient(), consistency.ClientOptions{Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader(),
		Uncached: []client.Object{&corev1.Secret{}}})
	guard := func(controller string) *consistency.Guard {
		return consistency.New(consistency.Options{Controller: controller, Clock: o.Clock})
	}
	r := &cluster.Reconciler{
		Client:                  guarded,
		APIReader:               mgr.GetAPIReader(),
		Provider:                p,
		Recorder:                mgr.GetEventRecorder("cluster-controller"),
		Clock:                   o.Clock,
		MaxConcurrentReconciles: o.ClusterConcurrency,
		KubeconfigPollInterval:  o.KubeconfigPollInterval,
		WorkloadQPS:             o.WorkloadQPS,
		WorkloadBurst:           o.WorkloadBurst,
		RemoteLink: remotelink.Options{
			ProbeInterval:           o.WorkloadProbeInterval,
			CacheSyncTimeout:        o.LinkerCacheSyncTimeout,
			RestartDelay:            o.LinkerRestartDelay,
			MaxConcurrentReconciles: o.LinkConcurrency,
			Clock:                   o.Clock,
		},
	}
	if err := r.SetupWithManager(ctx, mgr, guard("cluster")); err != nil {
		return nil, fmt.Errorf("setting up the cluster controller: %w", err)
	}
	// The remote drain controller drains, in their workload cluster, the Nodes of deleting
	// remote-nodes Machines, with machine-manager's drain defaults (emptyDir pods are evicted,
	// each pod keeps its own grace period).
	d := &remotedrain.Reconciler{
		Client:        guarded,
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder("remotedrain-controller"),
		Clock:         o.Clock,
		Drain:         drain.Options{DeleteEmptyDirData: true, Clock: o.Clock},
		WorkloadQPS:   o.WorkloadQPS,
		WorkloadBurst: o.WorkloadBurst,
	}
	if err := d.SetupWithManager(ctx, mgr, guard("remotedrain")); err != nil {
		return nil, fmt.Errorf("setting up the remote drain controller: %w", err)
	}
	if err := statemetrics.Register(metrics.Registry, cluster.Collector(mgr.GetCache(), mgr.Elected())); err != nil {
		return nil, fmt.Errorf("registering the metrics: %w", err)
	}
	return mgr, nil
}

// cacheOptions scopes the cache to one namespace if asked, and keeps no managed fields in memory.
// Secrets are never cached (the client reads them directly, with get only).
func cacheOptions(o Options) cache.Options {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if o.Namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	return opts
}
