package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/tools/localstack"
)

// TestCtrlCStopsEverything: make run's command, interrupted as Ctrl-C does once the control plane
// is up (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a manager it was given),
// exits, and leaves no process of it running.
func TestCtrlCStopsEverything(t *testing.T) {
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test` (it builds the control plane first)")
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "localstack")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	// A stand-in manager: it ignores its arguments (--kubeconfig) and runs until it is stopped,
	// under its own name (so that it is found by its path below).
	manager := filepath.Join(dir, "manager.sh")
	if err := os.WriteFile(manager, []byte("#!/bin/bash\nexec -a \"$0\" sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	apiPort, err := process.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	etcdPort, err := localstack.FreePortPair()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	cmd := exec.Command(exe, "--bin-dir", bin, "--state-dir", state, "--apiserver-port", strconv.Itoa(apiPort),
		"--etcd-port", strconv.Itoa(etcdPort), "--watch-machines=false", "--component", "manager="+manager)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	up := make(chan struct{})
	var out strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "The local control plane is up") {
				close(up)
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the control plane did not come up; stderr:\n%s", stderr.String())
	}
	running := processesUsing(dir)
	for _, want := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if !containsName(running, want) {
			t.Fatalf("%s is not running before the interrupt (found %v): the test would prove nothing", want, running)
		}
	}
	if len(processesUsing(manager)) == 0 {
		t.Fatalf("the manager is not running before the interrupt (found %v): the test would prove nothing", running)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("make run exited with %v after Ctrl-C; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("make run did not exit within a minute of Ctrl-C")
	}
	if left := processesUsing(dir); len(left) > 0 {
		t.Errorf("still running after Ctrl-C: %v", left)
	}
}

// processesUsing lists, as "name (pid)", the processes whose command line mentions path.
func processesUsing(path string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if !isDigits(e.Name()) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if strings.Contains(strings.Join(args, " "), path) {
			out = append(out, filepath.Base(args[0])+" ("+e.Name()+")")
		}
	}
	return out
}

func containsName(procs []string, name string) bool {
	for _, p := range procs {
		if strings.HasPrefix(p, name+" ") {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// TestWelcomeSaysWhereTheMetricsAre: make run names each manager's metrics endpoint, from the
// --metrics-bind-address it runs with.
func TestWelcomeSaysWhereTheMetricsAre(t *testing.T) {
	got := metricsHints([]string{
		"machine-manager=bin/machine-manager --metrics-bind-address=127.0.0.1:18080 --sim-boot-delay=3s",
		"cluster-manager=bin/cluster-manager --metrics-bind-address=:18082",
		"quiet=bin/quiet --metrics-bind-address=0",
	})
	for _, want := range []string{
		"curl -s http://127.0.0.1:18080/metrics | grep '^machineapi_'     # machine-manager",
		"curl -s http://127.0.0.1:18082/metrics | grep '^machineapi_'     # cluster-manager",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the welcome does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet") {
		t.Errorf("a component without metrics is named:\n%s", got)
	}
	if metricsHints([]string{"m=bin/m"}) != "" {
		t.Error("hints printed for components that serve no metrics")
	}
}
