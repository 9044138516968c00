package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/tools/localstack"
)

// target is the make target that runs the command (make run, make run-vms), named in its messages.
var target = "run"

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var (
		cfg         localstack.Config
		controllers string
		crds        multiFlag
		components  multiFlag
		samples     multiFlag
		watch       bool
		once        bool
		hints       string
		cleanup     bool
	)
	flag.StringVar(&target, "make-target", "run", "the make target that runs this command, for its messages")
	flag.StringVar(&cfg.BinDir, "bin-dir", "bin/k8s/1.37.2", "folder holding the source-built etcd and kube-apiserver")
	flag.StringVar(&cfg.StateDir, "state-dir", ".local", "folder for etcd data, certificates, logs and the kubeconfig (kept between runs)")
	flag.IntVar(&cfg.APIServerPort, "apiserver-port", 16443, "kube-apiserver port on 127.0.0.1")
	flag.IntVar(&cfg.EtcdPort, "etcd-port", 12379, "etcd client port on 127.0.0.1 (the peer port is this + 1)")
	flag.StringVar(&controllers, "controllers", "*", "kube-controller-manager's --controllers (\"*\": every default controller; empty: do not run kube-controller-manager)")
	flag.BoolVar(&cfg.Scheduler, "scheduler", true, "run kube-scheduler")
	flag.Var(&crds, "crds", "a CRD file or folder of CRD files to install (repeatable)")
	flag.Var(&components, "component", "name=command line of a manager to run against the local API server, with KUBECONFIG set (repeatable)")
	flag.Var(&samples, "apply", "a manifest file or folder to apply once the components run (repeatable)")
	flag.BoolVar(&watch, "watch-machines", true, "print the machines as they change")
	flag.StringVar(&hints, "hints", "", "a text file printed after the welcome (commands worth trying with the samples)")
	flag.BoolVar(&cfg.NodeBootstrap, "node-bootstrap", false, "let real kubelets join with bootstrap tokens (make run-vms): bootstrap-token authentication and NodeRestriction in kube-apiserver, the bootstrap-token controllers in kube-controller-manager, and the RBAC of "+localstack.NodeBootstrapManifests+" (run from the repository root)")
	flag.BoolVar(&cleanup, "delete-applied-on-exit", false, "on Ctrl-C, delete what -apply applied and wait until it is gone (real machines are drained and deleted) before stopping; a second Ctrl-C stops at once")
	flag.BoolVar(&once, "exit-when-ready", false, "stop everything and exit 0 once the control plane is up and the samples are applied (for tests)")
	flag.Parse()
	cfg.Log = os.Stdout
	if controllers != "" {
		cfg.ControllerManager = strings.Split(controllers, ",")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, crds, components, samples, watch, once, cleanup, hints); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "\nmake %s failed: %v\n", target, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg localstack.Config, crds, components, samples []string, watch, once, cleanup bool, hints string) error {
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return err
	}
	resumed := dirExists(filepath.Join(cfg.StateDir, "etcd"))
	plane, err := localstack.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping: managers, kube-scheduler, kube-controller-manager, kube-apiserver, etcd ...")
		plane.Stop()
		fmt.Printf("stopped; the data stays in %s (make clean removes it)\n", cfg.StateDir)
	}()
	if resumed {
		fmt.Printf("control plane: resumed with the data already in %s\n", cfg.StateDir)
	}

	restCfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		return err
	}
	restCfg.QPS, restCfg.Burst = 50, 100
	applier, err := localstack.NewApplier(restCfg)
	if err != nil {
		return err
	}
	crdFiles, err := localstack.ManifestFiles(crds...)
	if err != nil {
		return err
	}
	if _, err := applier.ApplyFiles(ctx, crdFiles...); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	fmt.Printf("CRDs: %d file(s) installed\n", len(crdFiles))
	if cfg.NodeBootstrap {
		objs, err := localstack.ApplyNodeBootstrap(ctx, applier, ".")
		if err != nil {
			return err
		}
		fmt.Printf("node bootstrap: %d RBAC object(s) of %s applied; kubelets may join with bootstrap tokens\n", len(objs), localstack.NodeBootstrapManifests)
	}

	kubeconfig, err := filepath.Abs(plane.Kubeconfig)
	if err != nil {
		return err
	}
	procs, err := startComponents(cfg.StateDir, kubeconfig, components)
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(20 * time.Second)
		}
	}()
	if err != nil {
		return err
	}

	sampleFiles, err := localstack.ManifestFiles(samples...)
	if err != nil {
		return err
	}
	var applied []*unstructured.Unstructured
	if len(sampleFiles) > 0 {
		objs, err := applier.ApplyFiles(ctx, sampleFiles...)
		applied = objs
		if err != nil {
			return fmt.Errorf("applying samples: %w", err)
		}
		for _, o := range objs {
			fmt.Printf("applied %s %s\n", strings.ToLower(o.GetKind()), o.GetName())
		}
	}

	printWelcome(cfg, kubeconfig, components, cleanup)
	if hints != "" {
		if text, err := os.ReadFile(hints); err == nil {
			fmt.Println(string(text))
		}
	}
	if once {
		return nil
	}

	exited := make(chan *process.Process, len(procs)+2)
	go func() { exited <- <-plane.Exited() }()
	for _, p := range procs {
		go func() {
			<-p.Done()
			exited <- p
		}()
	}
	var machines <-chan string
	if watch {
		machines = watchMachines(ctx, applier.Dynamic())
	}
	for {
		select {
		case <-ctx.Done():
			if cleanup && len(applied) > 0 {
				deleteApplied(applier, applied)
			}
			return ctx.Err()
		case p := <-exited:
			return fmt.Errorf("%s exited (%v); its log is %s", p.Name, p.Err(), p.LogFile) //nolint:errorlint // the exit status is shown, not wrapped: Err is nil after a clean exit
		case table, ok := <-machines:
			if !ok {
				machines = nil
				continue
			}
			fmt.Print(table)
		}
	}
}

// deleteApplied deletes what the samples made and waits until it is gone, while the managers
// still run to finish the deletions (drain, delete the machines); a second Ctrl-C gives up.
func deleteApplied(applier *localstack.Applier, objs []*unstructured.Unstructured) {
	fmt.Println("\ndeleting what was applied, and waiting until it is gone (Ctrl-C again to stop at once and leave it) ...")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := applier.DeleteAndWait(ctx, objs, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "not deleted:", err)
		return
	}
	fmt.Println("deleted")
}

func startComponents(stateDir, kubeconfig string, components []string) ([]*process.Process, error) {
	var procs []*process.Process
	for _, c := range components {
		name, cmdline, ok := strings.Cut(c, "=")
		fields := strings.Fields(cmdline)
		if !ok || name == "" || len(fields) == 0 {
			return procs, fmt.Errorf("--component %q: want name=command [args...]", c)
		}
		logFile := filepath.Join(stateDir, "logs", name+".log")
		args := append(fields[1:], "--kubeconfig="+kubeconfig)
		p, err := process.Start(name, fields[0], args, logFile)
		if err != nil {
			return procs, err
		}
		procs = append(procs, p)
		fmt.Printf("%s: started (pid %d), log in %s\n", name, p.Pid(), logFile)
	}
	return procs, nil
}

// stopHint says what Ctrl-C does.
func stopHint(cleanup bool) string {
	if cleanup {
		return fmt.Sprintf("Ctrl-C deletes what was applied (machines are drained and deleted), then stops everything;\nmake %s again applies it again on the same data; make clean removes the data.", target)
	}
	return fmt.Sprintf("Ctrl-C stops everything; make %s again resumes with the same data; make clean removes it.", target)
}

func printWelcome(cfg localstack.Config, kubeconfig string, components []string, cleanup bool) {
	bin, _ := filepath.Abs(cfg.BinDir)
	fmt.Printf(`
The local control plane is up. In another terminal:

    export KUBECONFIG=%s
    export PATH=%s:$PATH      # the source-built kubectl

    kubectl get nodes
    kubectl get machineapi            # every Machine API object
    kubectl get machines -o wide
%s
%s

`, kubeconfig, bin, metricsHints(components), stopHint(cleanup))
}

// metricsHints says where each component serves its metrics (its --metrics-bind-address), or ""
// when none does.
func metricsHints(components []string) string {
	var b strings.Builder
	for _, c := range components {
		name, cmdline, _ := strings.Cut(c, "=")
		for _, arg := range strings.Fields(cmdline) {
			addr, ok := strings.CutPrefix(arg, "--metrics-bind-address=")
			if !ok || addr == "0" {
				continue
			}
			if strings.HasPrefix(addr, ":") {
				addr = "127.0.0.1" + addr
			}
			fmt.Fprintf(&b, "    curl -s http://%s/metrics | grep '^machineapi_'     # %s\n", addr, name)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nThe managers' Prometheus metrics (docs/operations.md lists every metric, the alert rules and the\n" +
		"Grafana dashboard; docs/examples/prometheus.yaml scrapes them with the alert rules):\n\n" + b.String()
}

func dirExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
