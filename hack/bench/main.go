package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/go-logr/logr"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/tools/localstack"
	"machineapi.dev/machine-api/manager"
)

type options struct {
	binDir, managerBin, nodelinkBin, root, out string
	machines, floorNodes, floorWorkers         int
	managerArgs                                string
	pprof                                      bool
	skip                                       string
	audit                                      string
	controllers                                string
	scheduler                                  bool
	schemaFloor                                bool
	applyFloor                                 bool
	apiserverProfile                           string
	managerProfile                             string
	profileAfter                               time.Duration
	compareRounds, compareWith                 int
	abManager                                  string
	abRounds                                   int
	noFloors                                   bool // leave the write floors out (A/B runs)
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", os.Getenv("KUBEBUILDER_ASSETS"), "folder of the source-built etcd and kube-apiserver")
	flag.StringVar(&o.managerBin, "machine-manager", "", "the machine-manager binary to run")
	flag.StringVar(&o.nodelinkBin, "nodelink", "", "the nodelink binary to run")
	flag.StringVar(&o.root, "root", "../..", "repository root (for the CRDs)")
	flag.StringVar(&o.out, "out", "bench.json", "where to write the figures as JSON")
	flag.IntVar(&o.machines, "machines", 1000, "machines to scale to (BENCH_FULL=1 makes it 5000)")
	flag.IntVar(&o.floorNodes, "floor-nodes", 2000, "Nodes written to measure the write floor")
	flag.IntVar(&o.floorWorkers, "floor-workers", 100, "concurrent writers for the write floor")
	flag.StringVar(&o.managerArgs, "manager-args", "", "extra flags for machine-manager (space separated)")
	flag.BoolVar(&o.pprof, "pprof", false, "serve the manager's pprof on 127.0.0.1:6060 (profile with go tool pprof)")
	flag.StringVar(&o.skip, "skip", "", "comma-separated steps to skip: mhc, scaledown, nodelink")
	flag.StringVar(&o.audit, "audit-log", "", "write the API server's audit log of writes to this file (to see who writes what)")
	// The simulated kubelets send no heartbeats here (1000-5000 Leases renewed every 10s would
	// compete with the scale-up for the API server), so the node lifecycle controller, which would
	// mark every Node unreachable, is off; so is the TTL controller, whose only job is an
	// annotation on every Node for a kubelet's cache (1-3 Node writes each as the cluster grows,
	// counted as the Machine API's otherwise).
	flag.StringVar(&o.controllers, "controllers", "*,-nodelifecycle,-ttl", "kube-controller-manager's --controllers (empty: no kube-controller-manager)")
	flag.BoolVar(&o.scheduler, "scheduler", true, "run kube-scheduler")
	flag.StringVar(&o.apiserverProfile, "apiserver-profile", "", "write a 20s CPU profile of kube-apiserver, taken during the scale-up (see -profile-after), to this file (go tool pprof -top FILE)")
	flag.StringVar(&o.managerProfile, "manager-profile", "", "write a 20s CPU profile of machine-manager, taken during the scale-up (see -profile-after), to this file (implies -pprof)")
	flag.DurationVar(&o.profileAfter, "profile-after", 0, "start the CPU profiles this long after the start of the scale-up")
	flag.BoolVar(&o.applyFloor, "apply-floor", false, "also measure the Machine write floor with the status written by server-side apply (as the controllers write it) instead of an update")
	flag.BoolVar(&o.schemaFloor, "schema-floor", false, "also measure the Machine write floor on copies of the Machine CRD with and without its CEL rules")
	flag.IntVar(&o.compareRounds, "compare-rounds", 0, "after the run, this many rounds of a 0 -> -compare-with and a 0 -> -machines scale-up, each on a fresh control plane, for the throughput ratio (BENCH_FULL=1 makes it 3)")
	flag.StringVar(&o.abManager, "ab-manager", "", "A/B instead of the usual run: -ab-rounds rounds of the 0 -> -machines scale-up with -machine-manager (A) and this machine-manager binary (B), each on a fresh control plane, the order alternating (make bench-ab builds A from BENCH_BASE)")
	flag.IntVar(&o.abRounds, "ab-rounds", 3, "rounds of -ab-manager")
	flag.IntVar(&o.compareWith, "compare-with", 1000, "the smaller scale-up of -compare-rounds")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if o.managerProfile != "" {
		o.pprof = true
	}
	if os.Getenv("BENCH_FULL") == "1" {
		o.machines = 5000
		if !flagSet("compare-rounds") {
			o.compareRounds = 3
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep interface{ markdown() string }
	var err error
	if o.abManager != "" {
		var c *abComparison
		if c, err = abCompare(ctx, o); c != nil {
			rep = c
		}
	} else {
		var res *results
		res, err = run(ctx, o)
		if err == nil && res != nil && o.compareRounds > 0 {
			res.Comparison, err = compare(ctx, o)
		}
		if res != nil {
			rep = res
		}
	}
	if rep != nil {
		fmt.Print(rep.markdown())
		if data, jerr := json.MarshalIndent(rep, "", "  "); jerr == nil {
			_ = os.WriteFile(o.out, data, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// flagSet says whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// env is the running benchmark environment.
type env struct {
	o          options
	plane      *localstack.Plane
	kubeconfig string
	cs         kubernetes.Interface
	c          client.Client
	cache      cache.Cache
	track      *tracker
	stateDir   string
	manager    *process.Process // the running machine-manager
}

func run(ctx context.Context, o options) (*results, error) {
	if o.binDir == "" || o.managerBin == "" || o.nodelinkBin == "" {
		return nil, fmt.Errorf("need -bin-dir (or KUBEBUILDER_ASSETS), -machine-manager and -nodelink: run make bench")
	}
	res := &results{host: thisHost(), Machines: o.machines}
	state, err := os.MkdirTemp("", "machineapi-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	apiserverPort, err := process.FreePort()
	if err != nil {
		return nil, err
	}
	etcdPort, err := localstack.FreePortPair() // etcd's peer port is the next one
	if err != nil {
		return nil, err
	}
	logf("starting a fresh control plane in %s", state)
	planeCfg := localstack.Config{BinDir: o.binDir, StateDir: state,
		APIServerPort: apiserverPort, EtcdPort: etcdPort, EtcdUnsafeNoFsync: true, AuditLog: o.audit, Scheduler: o.scheduler}
	if o.controllers != "" {
		planeCfg.ControllerManager = strings.Split(o.controllers, ",")
	}
	res.ControlPlane = controlPlane(planeCfg)
	logf("control plane: %s (simulated kubelets send no Lease or status heartbeats)", res.ControlPlane)
	plane, err := localstack.Start(ctx, planeCfg)
	if err != nil {
		return nil, err
	}
	defer plane.Stop()
	e := &env{o: o, plane: plane, kubeconfig: plane.Kubeconfig, stateDir: state}
	if err := e.connect(ctx); err != nil {
		return res, err
	}
	res.LoadAverage = loadAverage()

	if o.noFloors {
		return res, e.steps(ctx, res)
	}
	logf("measuring the write floor: %d Nodes created and updated by %d writers", o.floorNodes, o.floorWorkers)
	cfg, _ := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if res.Floor, err = measureFloor(ctx, cfg, o.floorNodes, o.floorWorkers); err != nil {
		return res, err
	}
	logf("  floor: %.0f writes/s", res.Floor.WritesPerSec)
	logf("measuring the Machine write floor: %d Machines created and status-updated by %d writers", o.floorNodes, o.floorWorkers)
	if res.MachineFloor, err = measureMachineFloor(ctx, cfg, floorNamespace, o.floorNodes, o.floorWorkers, false); err != nil {
		return res, err
	}
	logf("  Machine floor: %.0f writes/s", res.MachineFloor.WritesPerSec)
	if o.applyFloor {
		logf("measuring the Machine write floor with status applies: %d Machines created and status-applied by %d writers", o.floorNodes, o.floorWorkers)
		floor, err := measureMachineFloor(ctx, cfg, floorNamespace, o.floorNodes, o.floorWorkers, true)
		if err != nil {
			return res, err
		}
		res.MachineApplyFloor = &floor
		logf("  Machine floor with status applies: %.0f writes/s", floor.WritesPerSec)
	}
	if o.schemaFloor {
		logf("measuring the write floor of copies of the Machine CRD with and without its CEL rules")
		floors, err := measureSchemaFloors(ctx, cfg, o.root, o.floorNodes, o.floorWorkers)
		if err != nil {
			return res, err
		}
		res.SchemaFloors = &floors
		logf("  with the rules: %.0f writes/s, without: %.0f writes/s", floors.WithRules.WritesPerSec, floors.WithoutRules.WritesPerSec)
	}
	return res, e.steps(ctx, res)
}

// controlPlane says which components run, for the figures.
func controlPlane(cfg localstack.Config) string {
	parts := []string{"etcd", "kube-apiserver"}
	if len(cfg.ControllerManager) > 0 {
		parts = append(parts, "kube-controller-manager (--controllers="+strings.Join(cfg.ControllerManager, ",")+")")
	}
	if cfg.Scheduler {
		parts = append(parts, "kube-scheduler")
	}
	return strings.Join(parts, ", ")
}

func (e *env) connect(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	if e.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.c, err = client.New(cfg, client.Options{Scheme: manager.Scheme()}); err != nil {
		return err
	}
	applier, err := localstack.NewApplier(cfg)
	if err != nil {
		return err
	}
	files, err := localstack.ManifestFiles(filepath.Join(e.o.root, "machine-api/config/crd/bases"), filepath.Join(e.o.root, "machine-api/config/admission"))
	if err != nil {
		return err
	}
	if _, err := applier.ApplyFiles(ctx, files...); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}
	if e.cache, err = cache.New(cfg, cache.Options{Scheme: manager.Scheme(), DefaultTransform: cache.TransformStripManagedFields()}); err != nil {
		return err
	}
	if e.track, err = newTracker(ctx, e.cache); err != nil {
		return err
	}
	go func() { _ = e.cache.Start(ctx) }()
	if !e.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("the benchmark's cache did not sync")
	}
	return nil
}

func (e *env) skipped(step string) bool {
	for _, s := range strings.Split(e.o.skip, ",") {
		if strings.TrimSpace(s) == step {
			return true
		}
	}
	return false
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
