package testplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"machineapi.dev/drain/testplane/process"
)

// Controller lists for Options.Controllers.
var (
	// DisruptionControllers computes PodDisruptionBudget status, and nothing else.
	DisruptionControllers = []string{"disruption"}
	// GarbageCollectorControllers computes PodDisruptionBudget status, deletes what an owner
	// reference ties to a deleted owner and finishes namespace deletion.
	GarbageCollectorControllers = []string{"disruption", "garbagecollector", "namespace"}
)

// Options say how to run the components.
type Options struct {
	// BinDir holds kube-controller-manager and kube-scheduler (KUBEBUILDER_ASSETS).
	BinDir string
	// Kubeconfig is an admin kubeconfig of the API server (envtest: AddUser in system:masters).
	Kubeconfig []byte
	// Dir receives the kubeconfig file, the logs and the components' serving certificates.
	Dir string
	// Controllers is kube-controller-manager's --controllers; empty starts no
	// kube-controller-manager.
	Controllers []string
	// ServiceAccountKeyFile, when set, is the private key the API server verifies service-account
	// tokens with (envtest: <CertDir>/sa-signer.key), so the token controller can sign tokens.
	ServiceAccountKeyFile string
	// Scheduler starts kube-scheduler.
	Scheduler bool
	// ExtraControllerManagerArgs are appended to kube-controller-manager's flags (e.g.
	// "--node-monitor-grace-period=20s").
	ExtraControllerManagerArgs []string
}

// Components are the running processes.
type Components struct {
	procs []*process.Process
}

// MissingBinaryError says which binary is missing and how to build it.
type MissingBinaryError struct {
	Path string
}

func (e *MissingBinaryError) Error() string {
	return fmt.Sprintf("%s is missing: run `make controlplane` (or `make test`) from the repository root to build it from source", e.Path)
}

// Start starts the components the options ask for and waits until each is healthy. On error
// nothing is left running.
func Start(ctx context.Context, o Options) (*Components, error) {
	if len(o.Controllers) == 0 && !o.Scheduler {
		return &Components{}, nil
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(o.Dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, o.Kubeconfig, 0o600); err != nil {
		return nil, err
	}
	type component struct {
		name string
		args []string
	}
	var todo []component
	if len(o.Controllers) > 0 {
		args := []string{"--controllers=" + strings.Join(o.Controllers, ",")}
		if o.ServiceAccountKeyFile != "" {
			args = append(args, "--service-account-private-key-file="+o.ServiceAccountKeyFile)
		}
		todo = append(todo, component{"kube-controller-manager", append(args, o.ExtraControllerManagerArgs...)})
	}
	if o.Scheduler {
		todo = append(todo, component{"kube-scheduler", nil})
	}
	var errs []error
	for _, c := range todo {
		path := filepath.Join(o.BinDir, c.name)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, &MissingBinaryError{Path: path})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cs := &Components{}
	for _, c := range todo {
		port, err := process.FreePort()
		if err != nil {
			cs.Stop()
			return nil, err
		}
		args := append([]string{
			"--kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(o.Dir, c.name+"-certs"),
			"--leader-elect=false",
		}, c.args...)
		p, err := process.Start(c.name, filepath.Join(o.BinDir, c.name), args, filepath.Join(o.Dir, c.name+".log"))
		if err != nil {
			cs.Stop()
			return nil, err
		}
		cs.procs = append(cs.procs, p)
		// The health endpoint is served with a self-signed certificate and needs no credentials.
		insecure := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // loopback health check of a self-signed server
		if err := process.WaitHTTP(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), insecure, time.Minute); err != nil {
			cs.Stop()
			return nil, err
		}
	}
	return cs, nil
}

// Stop terminates the components (SIGTERM, then SIGKILL after 10 seconds) and waits for them.
func (c *Components) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(10 * time.Second)
	}
	c.procs = nil
}

// LogFiles returns the log file of each running component, by name.
func (c *Components) LogFiles() map[string]string {
	out := map[string]string{}
	for _, p := range c.procs {
		out[p.Name] = p.LogFile
	}
	return out
}
