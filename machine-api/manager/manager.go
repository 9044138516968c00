package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"machineapi.dev/drain"
	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/capacity"
	"machineapi.dev/machine-api/internal/controller/machine"
	"machineapi.dev/machine-api/internal/controller/machineclass"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/controller/machinehealthcheck"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/orphans"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/machinelink"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/statemetrics"
)

// ManagerSetup is implemented by providers that need the manager: to watch objects, run
// background work, or use its client. New calls SetupWithManager before starting anything.
type ManagerSetup interface {
	SetupWithManager(mgr ctrl.Manager) error
}

// Scheme returns a scheme with the Kubernetes built-in types and machine.machineapi.dev/v1beta1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(clientgoscheme.AddToScheme(s))
	utilruntimeMust(v1beta1.AddToScheme(s))
	return s
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

// Run starts the manager for provider p with the client configuration of --kubeconfig (or the
// in-cluster one) and blocks until ctx is cancelled.
func Run(ctx context.Context, p provider.Provider, o Options) error {
	return o.Options.Run(ctx, "machine-manager", func(ctx context.Context, cfg *rest.Config) (ctrl.Manager, error) {
		return New(ctx, cfg, p, o)
	}, "namespace", o.Namespace, "machineSelector", o.MachineSelector)
}

// New builds a manager running every machine-api controller around provider p. Start it with
// mgr.Start.
func New(ctx context.Context, cfg *rest.Config, p provider.Provider, o Options) (ctrl.Manager, error) {
	if p == nil {
		return nil, errors.New("manager: a provider is required")
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	cfg = o.RESTConfig(cfg)
	selector := labels.Everything()
	if o.MachineSelector != "" {
		sel, err := labels.Parse(o.MachineSelector)
		if err != nil {
			return nil, fmt.Errorf("--machine-selector %q is not a label selector: %w", o.MachineSelector, err)
		}
		selector = sel
	}
	mgr, err := o.NewManager(cfg, ctrl.Options{Scheme: Scheme(), Cache: cacheOptions(o, selector)})
	if err != nil {
		return nil, err
	}
	if err := setupControllers(ctx, mgr, cfg, p, o, selector); err != nil {
		return nil, err
	}
	if err := setupOrphans(mgr, p, o); err != nil {
		return nil, err
	}
	if s, ok := p.(ManagerSetup); ok {
		if err := s.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the provider: %w", err)
		}
	}
	return mgr, nil
}

// setupOrphans adds the orphan collector when the provider can list its instances, and says once
// that orphan collection is off when it cannot.
func setupOrphans(mgr ctrl.Manager, p provider.Provider, o Options) error {
	if err := o.Orphans.Validate(); err != nil {
		return err
	}
	log := ctrl.Log.WithName("orphans")
	l, ok := p.(provider.Lister)
	if !ok {
		log.Info("orphan collection is off: the provider does not implement provider.Lister, so instances whose Machine is gone are neither found nor deleted")
		return nil
	}
	return mgr.Add(&orphans.Collector{
		Lister: l, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("orphan-collector"),
		Clock: o.Clock, Log: log, Options: o.Orphans, Namespace: o.Namespace,
	})
}

// cacheOptions scopes the cache: one namespace if asked, only selected Machines, and no managed
// fields kept in memory.
func cacheOptions(o Options, selector labels.Selector) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&v1beta1.Machine{}: {Label: selector},
		},
	}
	if o.Namespace != "" {
		// Default namespaces apply to namespaced kinds only: Nodes stay cached cluster-wide (and
		// controller-runtime refuses namespaces on a cluster-scoped kind).
		opts.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	return opts
}

func setupControllers(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, p provider.Provider, o Options, selector labels.Selector) error {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	drainOpts := drain.Options{DeleteEmptyDirData: o.DrainDeleteEmptyDirData, Clock: o.Clock}
	if o.DrainGracePeriodSeconds >= 0 {
		drainOpts.GracePeriodSeconds = ptr.To(o.DrainGracePeriodSeconds)
	}
	drainer, err := drain.New(clientset, drainOpts)
	if err != nil {
		return fmt.Errorf("configuring the drain: %w", err)
	}
	if err := index.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// Every controller writes through one guarded client and runs behind a consistency guard of
	// its own: a reconcile acts only once the cache shows what the earlier reconciles of its object
	// wrote (package consistency; the node linker guards itself the same way).
	guarded := consistency.NewClient(mgr.GetClient(), consistency.ClientOptions{Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader()})
	guard := func(controller string) *consistency.Guard {
		return consistency.New(consistency.Options{Controller: controller, Clock: o.Clock})
	}
	machines := &machine.Reconciler{
		Client:                  guarded,
		Provider:                p,
		Drainer:                 drainer,
		Recorder:                mgr.GetEventRecorder("machine-controller"),
		Clock:                   o.Clock,
		MaxConcurrentReconciles: o.MachineConcurrency,
	}
	linkSelector := selector
	if o.NodeLinkSelector != "" {
		extra, err := labels.Parse(o.NodeLinkSelector)
		if err != nil {
			return fmt.Errorf("--node-link-selector %q is not a label selector: %w", o.NodeLinkSelector, err)
		}
		reqs, _ := extra.Requirements()
		linkSelector = selector.Add(reqs...)
	}
	// The machine controller records the links of the Machines this linker handles, in its own
	// status writes: a link and the Running it allows cost one write.
	linker, err := machinelink.Setup(ctx, mgr, mgr, machinelink.Options{
		Namespace: o.Namespace, Selector: linkSelector, MaxConcurrentReconciles: o.MachineConcurrency, Recorder: machines,
	})
	if err != nil {
		return fmt.Errorf("setting up the node linker: %w", err)
	}
	machines.Linker = linker
	if err := machines.SetupWithManager(mgr, guard("machine")); err != nil {
		return fmt.Errorf("setting up the machine controller: %w", err)
	}
	if n, ok := p.(provider.InterruptionNotifier); ok {
		n.NotifyInterruptions(machines.InterruptionNoticed)
	}
	for _, c := range []prometheus.Collector{
		machines.Collector(mgr.GetCache(), mgr.Elected()),
		machineset.Collector(mgr.GetCache(), mgr.Elected()),
		machinedeployment.Collector(mgr.GetCache(), mgr.Elected()),
		machinehealthcheck.Collector(mgr.GetCache(), mgr.Elected()),
	} {
		if err := statemetrics.Register(metrics.Registry, c); err != nil {
			return fmt.Errorf("registering the metrics: %w", err)
		}
	}
	classes := &machineclass.Reconciler{Client: guarded, Recorder: mgr.GetEventRecorder("machineclass-controller")}
	if err := classes.SetupWithManager(mgr, guard("machineclass")); err != nil {
		return fmt.Errorf("setting up the machineclass controller: %w", err)
	}
	deps := func(controller string) reconciler.Deps {
		return reconciler.Deps{Client: guarded, APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(controller + "-controller"),
			Clock: o.Clock, MaxConcurrentReconciles: o.SetConcurrency}
	}
	checks := &machinehealthcheck.Reconciler{Deps: deps("machinehealthcheck")}
	if err := checks.SetupWithManager(mgr, guard("machinehealthcheck")); err != nil {
		return fmt.Errorf("setting up the machinehealthcheck controller: %w", err)
	}
	sets := &machineset.Reconciler{Deps: deps("machineset"), MachineSelector: selector}
	if err := sets.SetupWithManager(mgr, guard("machineset")); err != nil {
		return fmt.Errorf("setting up the machineset controller: %w", err)
	}
	deployments := &machinedeployment.Reconciler{Deps: deps("machinedeployment"), MachineSelector: selector}
	if err := deployments.SetupWithManager(mgr, guard("machinedeployment")); err != nil {
		return fmt.Errorf("setting up the machinedeployment controller: %w", err)
	}
	if err := capacity.ForMachineSets(guarded, mgr.GetEventRecorder("machineset-capacity")).SetupWithManager(mgr, guard("machineset-capacity")); err != nil {
		return fmt.Errorf("setting up the capacity annotations of MachineSets: %w", err)
	}
	if err := capacity.ForMachineDeployments(guarded, mgr.GetEventRecorder("machinedeployment-capacity")).SetupWithManager(mgr, guard("machinedeployment-capacity")); err != nil {
		return fmt.Errorf("setting up the capacity annotations of MachineDeployments: %w", err)
	}
	return nil
}
