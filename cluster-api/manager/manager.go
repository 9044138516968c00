package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/controller/cluster"
	"machineapi.dev/cluster-api/internal/controller/remotedrain"
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
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading the API server configuration (pass --kubeconfig or run in a cluster): %w", err)
	}
	mgr, err := New(ctx, cfg, p, o)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("cluster-manager").Info("starting", "namespace", o.Namespace, "leaderElection", o.LeaderElection, "qps", o.QPS, "burst", o.Burst)
	return mgr.Start(ctx)
}

// New builds a manager running the Cluster controller around cluster provider p, and the remote
// drain controller. Start it with
// mgr.Start.
func New(ctx context.Context, cfg *rest.Config, p provider.Provider, o Options) (ctrl.Manager, error) {
	if p == nil {
		return nil, errors.New("manager: a cluster provider is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsBindAddress},
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaseDuration:                 &o.LeaseDuration,
		RenewDeadline:                 &o.RenewDeadline,
		RetryPeriod:                   &o.RetryPeriod,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(o.GracefulShutdownTimeout),
		Cache:                         cacheOptions(o),
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Controller:                    config.Controller{SkipNameValidation: ptr.To(o.SkipControllerNameValidation)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error { return readyCheck(mgr, req) }); err != nil {
		return nil, err
	}
	r := &cluster.Reconciler{
		Client:                  mgr.GetClient(),
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
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the cluster controller: %w", err)
	}
	// The remote drain controller drains, in their workload cluster, the Nodes of deleting
	// remote-nodes Machines, with machine-manager's drain defaults (emptyDir pods are evicted,
	// each pod keeps its own grace period).
	d := &remotedrain.Reconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Recorder:      mgr.GetEventRecorder("remotedrain-controller"),
		Clock:         o.Clock,
		Drain:         drain.Options{DeleteEmptyDirData: true, Clock: o.Clock},
		WorkloadQPS:   o.WorkloadQPS,
		WorkloadBurst: o.WorkloadBurst,
	}
	if err := d.SetupWithManager(ctx, mgr); err != nil {
		return nil, fmt.Errorf("setting up the remote drain controller: %w", err)
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

// readyCheck reports ready once the manager's caches have synced.
func readyCheck(mgr ctrl.Manager, req *http.Request) error {
	ctx, cancel := context.WithTimeout(req.Context(), time.Second)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("caches have not synced yet")
	}
	return nil
}
