package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/go-logr/logr"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

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
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	if os.Getenv("BENCH_FULL") == "1" {
		o.machines = 5000
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if res != nil {
		fmt.Print(res.markdown())
		if data, jerr := json.MarshalIndent(res, "", "  "); jerr == nil {
			_ = os.WriteFile(o.out, data, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
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
}

func run(ctx context.Context, o options) (*results, error) {
	if o.binDir == "" || o.managerBin == "" || o.nodelinkBin == "" {
		return nil, fmt.Errorf("need -bin-dir (or KUBEBUILDER_ASSETS), -machine-manager and -nodelink: run make bench")
	}
	res := &results{Machines: o.machines, Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Go: runtime.Version()}
	state, err := os.MkdirTemp("", "machineapi-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	logf("starting a fresh control plane in %s", state)
	plane, err := localstack.Start(ctx, localstack.Config{BinDir: o.binDir, StateDir: state,
		APIServerPort: freePort(), EtcdPort: freePort(), EtcdUnsafeNoFsync: true, AuditLog: o.audit})
	if err != nil {
		return nil, err
	}
	defer plane.Stop()
	e := &env{o: o, plane: plane, kubeconfig: plane.Kubeconfig, stateDir: state}
	if err := e.connect(ctx); err != nil {
		return res, err
	}
	res.LoadAverage = loadAverage()

	logf("measuring the write floor: %d Nodes created and updated by %d writers", o.floorNodes, o.floorWorkers)
	cfg, _ := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if res.Floor, err = measureFloor(ctx, cfg, o.floorNodes, o.floorWorkers); err != nil {
		return res, err
	}
	logf("  floor: %.0f writes/s", res.Floor.WritesPerSec)
	logf("measuring the Machine write floor: %d Machines created and status-updated by %d writers", o.floorNodes, o.floorWorkers)
	if res.MachineFloor, err = measureMachineFloor(ctx, cfg, floorNamespace, o.floorNodes, o.floorWorkers); err != nil {
		return res, err
	}
	logf("  Machine floor: %.0f writes/s", res.MachineFloor.WritesPerSec)
	return res, e.steps(ctx, res)
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

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
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
