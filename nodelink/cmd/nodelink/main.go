package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"machineapi.dev/nodelink"
)

// config is what the flags say.
type config struct {
	gvk                     string
	paths                   nodelink.FieldPaths
	annotationPrefix        string
	initializationTaintKey  string
	pausedAnnotation        string
	nodeKubeconfig          string
	namespace               string
	selector                string
	maxConcurrentReconciles int
	leaderElect             bool
	leaderElectionID        string
	leaderElectionNamespace string
	metricsAddr             string
	probeAddr               string
	qps                     float64
	burst                   int
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var c config
	var refFields, labelPrefixes string
	d := nodelink.MachineAPIFieldPaths()
	fs.StringVar(&c.gvk, "machine-gvk", "machine.machineapi.dev/v1beta1/Machine", "group/version/Kind of the machine-like objects to link")
	fs.StringVar(&c.paths.ProviderID, "provider-id-path", d.ProviderID, "path of the machine's provider ID (a string); empty: match by InternalIP only")
	fs.StringVar(&c.paths.Addresses, "addresses-path", d.Addresses, "path of the machine's addresses (a list of {type, address}); empty: match by providerID only")
	fs.StringVar(&c.paths.NodeRef, "node-ref-path", d.NodeRef, "path of the machine's node reference (an object nodelink writes)")
	fs.StringVar(&refFields, "node-ref-fields", strings.Join(d.NodeRefFields, ","), "fields of the node reference to write, among apiVersion,kind,name,uid; all must exist in the CRD's schema")
	fs.StringVar(&c.paths.Conditions, "conditions-path", d.Conditions, "path of the machine's conditions list, where nodelink writes NodeLinked; empty: write no condition")
	fs.StringVar(&c.paths.Labels, "labels-path", d.Labels, "path of the labels (a string map) the machine wants on its Node; empty: none")
	fs.StringVar(&labelPrefixes, "label-prefixes", "", "comma-separated key prefixes: copy only the labels starting with one of them (empty: all)")
	fs.StringVar(&c.paths.Annotations, "annotations-path", d.Annotations, "path of the annotations (a string map) the machine wants on its Node; empty: none")
	fs.StringVar(&c.paths.Taints, "taints-path", d.Taints, "path of the taints (a list of {key, value, effect}) the machine wants on its Node; empty: none")
	fs.StringVar(&c.annotationPrefix, "annotation-prefix", "", "prefix of the annotations written on Nodes (<prefix>/machine, ...); default: the machine kind's API group")
	fs.StringVar(&c.initializationTaintKey, "initialization-taint-key", nodelink.DefaultInitializationTaintKey, "key of the taint a machine's Node registers with, that keeps workloads off it until nodelink has applied the machine's labels and taints (nodelink removes it then, in the same patch)")
	fs.StringVar(&c.pausedAnnotation, "paused-annotation", "", "machines with this annotation are left alone, and so are their Nodes; default: <annotation-prefix>/paused; \"-\": none")
	fs.StringVar(&c.nodeKubeconfig, "node-kubeconfig", "", "kubeconfig of the cluster whose Nodes are linked; default: the machines' cluster")
	fs.StringVar(&c.namespace, "namespace", "", "link only the machines of this namespace (and cache only those)")
	fs.StringVar(&c.selector, "machine-selector", "", "link only the machines matching this label selector")
	fs.IntVar(&c.maxConcurrentReconciles, "max-concurrent-reconciles", nodelink.DefaultMaxConcurrentReconciles, "machines reconciled in parallel")
	fs.BoolVar(&c.leaderElect, "leader-elect", false, "elect a leader, so that only one replica links")
	fs.StringVar(&c.leaderElectionID, "leader-election-id", "", "name of the leader election Lease; default: nodelink.<machine group>")
	fs.StringVar(&c.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease; default: the pod's namespace")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":8080", "address of the metrics endpoint; 0 disables it")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints; 0 disables them")
	fs.Float64Var(&c.qps, "kube-api-qps", -1, "client-side queries per second to each API server; negative: no client-side limit (the API server's priority and fairness still applies)")
	fs.IntVar(&c.burst, "kube-api-burst", 0, "client-side burst to each API server (with a positive --kube-api-qps)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.paths.NodeRefFields = splitComma(refFields)
	c.paths.LabelPrefixes = splitComma(labelPrefixes)
	gvk, err := nodelink.ParseGVK(c.gvk)
	if err != nil {
		return c, fmt.Errorf("--machine-gvk: %w", err)
	}
	if c.annotationPrefix == "" {
		c.annotationPrefix = gvk.Group
	}
	switch c.pausedAnnotation {
	case "":
		c.pausedAnnotation = c.annotationPrefix + "/paused"
	case "-":
		c.pausedAnnotation = ""
	}
	if c.leaderElectionID == "" {
		c.leaderElectionID = "nodelink." + gvk.Group
	}
	if _, err := labels.Parse(c.selector); err != nil {
		return c, fmt.Errorf("--machine-selector: %w", err)
	}
	return c, nil
}

func splitComma(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// The permissions of the default installation (nodelink/config), for machine.machineapi.dev
// Machines; another machine kind needs the same verbs on its own resource.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Set at link time by the release build (docs/releasing.md).
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	c, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	ctrl.Log.WithName("nodelink").Info("version", "version", version, "commit", commit, "built", date)
	if err := run(ctrl.SetupSignalHandler(), c); err != nil {
		ctrl.Log.Error(err, "nodelink failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	gvk, _ := nodelink.ParseGVK(c.gvk) // validated by parseFlags
	adapter, err := nodelink.NewUnstructuredAdapter(gvk, c.paths)
	if err != nil {
		return err
	}
	selector, _ := labels.Parse(c.selector) // validated by parseFlags
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading --kubeconfig: %w", err)
	}
	limit(cfg, c)
	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if c.namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{c.namespace: {}}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                  clientgoscheme.Scheme,
		Cache:                   cacheOpts,
		Metrics:                 metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress:  c.probeAddr,
		LeaderElection:          c.leaderElect,
		LeaderElectionID:        c.leaderElectionID,
		LeaderElectionNamespace: c.leaderElectionNamespace,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	nodes := cluster.Cluster(mgr)
	if c.nodeKubeconfig != "" {
		nodeCfg, err := clientcmd.BuildConfigFromFlags("", c.nodeKubeconfig)
		if err != nil {
			return fmt.Errorf("loading --node-kubeconfig: %w", err)
		}
		limit(nodeCfg, c)
		nodes, err = cluster.New(nodeCfg, func(o *cluster.Options) {
			o.Scheme = clientgoscheme.Scheme
			o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		})
		if err != nil {
			return fmt.Errorf("creating the Node-side cluster: %w", err)
		}
		if err := mgr.Add(nodes); err != nil {
			return err
		}
	}
	var paused func(client.Object) bool
	if c.pausedAnnotation != "" {
		paused = func(o client.Object) bool { _, ok := o.GetAnnotations()[c.pausedAnnotation]; return ok }
	}
	err = nodelink.Setup(ctx, mgr, nodes, adapter, nodelink.Options{
		AnnotationPrefix:        c.annotationPrefix,
		InitializationTaintKey:  c.initializationTaintKey,
		Paused:                  paused,
		Namespace:               c.namespace,
		Selector:                selector,
		MaxConcurrentReconciles: c.maxConcurrentReconciles,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("Linking Nodes", "machines", gvk.String(), "annotationPrefix", c.annotationPrefix, "nodeKubeconfig", c.nodeKubeconfig)
	return mgr.Start(ctx)
}

// limit applies the client-side rate limit flags to cfg.
func limit(cfg *rest.Config, c config) {
	cfg.QPS = float32(c.qps)
	if c.qps > 0 {
		cfg.Burst = c.burst
	}
}
