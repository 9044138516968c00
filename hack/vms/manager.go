package vms

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"machineapi.dev/drain/testplane/process"
)

// Manager is the machine-manager-libvirt binary, run as a child process against the suite's
// control plane, as a user runs it: every machine-api controller with the libvirt provider.
type Manager struct {
	proc        *process.Process
	metricsPort int
}

// BuildManager builds machine-manager-libvirt from the provider module in the repository at root
// into dir, and returns its path.
func BuildManager(root, dir string) (string, error) {
	out := filepath.Join(dir, "machine-manager-libvirt")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/machine-manager-libvirt")
	cmd.Dir = filepath.Join(root, "providers", "libvirt")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building machine-manager-libvirt: %w\n%s", err, b)
	}
	return out, nil
}

// StartManager runs binary with the kubeconfig, on the Machines of namespace, naming itself
// managerID in its domains' metadata; its log goes to logFile. It returns once the manager serves
// its metrics (its controllers are starting). extra flags go last.
func StartManager(ctx context.Context, binary, kubeconfig, namespace, managerID, logFile string, extra ...string) (*Manager, error) {
	port, err := process.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--namespace=" + namespace,
		"--libvirt-manager-id=" + managerID,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port),
		"--health-probe-bind-address=0",
		"--leader-elect=false",
	}
	args = append(args, extra...)
	p, err := process.Start("machine-manager-libvirt", binary, args, logFile)
	if err != nil {
		return nil, err
	}
	m := &Manager{proc: p, metricsPort: port}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		if err := m.Exited(); err != nil {
			return nil, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			m.Stop()
			return nil, fmt.Errorf("machine-manager-libvirt did not serve its metrics within a minute; see %s", logFile)
		}
		select {
		case <-ctx.Done():
			m.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Exited returns an error, with the end of its log, when the manager ended on its own.
func (m *Manager) Exited() error {
	select {
	case <-m.proc.Done():
		return fmt.Errorf("machine-manager-libvirt exited on its own (%v); the end of %s:\n%s", m.proc.Err(), m.proc.LogFile, process.Tail(m.proc.LogFile, 30)) //nolint:errorlint // the exit status is shown, not wrapped
	default:
		return nil
	}
}

// LogFile is the manager's log.
func (m *Manager) LogFile() string { return m.proc.LogFile }

// Stop stops the manager (SIGTERM, then SIGKILL after 20 s).
func (m *Manager) Stop() { m.proc.Stop(20 * time.Second) }
