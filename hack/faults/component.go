package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"machineapi.dev/drain/testplane/process"
)

// Component is a manager binary (machine-manager or cluster-manager) run as a child process, with
// its metrics (for the goroutine count) on a loopback port of its own. Every run appends to its
// own log file, kept for the panic check.
type Component struct {
	Name   string
	Binary string
	Args   []string
	LogDir string

	proc        *process.Process
	metricsPort int
	runs        int
	killed      bool
	logs        []string
}

// Start starts the component (again). The metrics port is chosen afresh on every start.
func (c *Component) Start() error {
	if c.proc != nil {
		return fmt.Errorf("%s is already running (pid %d)", c.Name, c.proc.Pid())
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.metricsPort = port
	c.runs++
	c.killed = false
	args := append([]string{fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--health-probe-bind-address=0"}, c.Args...)
	log := filepath.Join(c.LogDir, fmt.Sprintf("%s-%d.log", c.Name, c.runs))
	p, err := process.Start(c.Name, c.Binary, args, log)
	if err != nil {
		return err
	}
	c.proc = p
	c.logs = append(c.logs, log)
	return nil
}

// Kill sends SIGKILL to the component's process group: no graceful shutdown, no lease release.
func (c *Component) Kill() {
	if c.proc == nil {
		return
	}
	_ = syscall.Kill(-c.proc.Pid(), syscall.SIGKILL)
	<-c.proc.Done()
	c.proc, c.killed = nil, true
}

// Stop stops the component gracefully (SIGTERM, then SIGKILL after grace).
func (c *Component) Stop(grace time.Duration) {
	if c.proc == nil {
		return
	}
	c.proc.Stop(grace)
	c.proc = nil
}

// Running reports whether the component was started and has not exited.
func (c *Component) Running() bool {
	if c.proc == nil {
		return false
	}
	select {
	case <-c.proc.Done():
		return false
	default:
		return true
	}
}

// Exited returns an error when the component's process ended without being killed or stopped
// by the suite: a crash.
func (c *Component) Exited() error { return exitedOnItsOwn(c.Name, c.proc) }

// exitedOnItsOwn returns an error, with the end of its log, when p (nil: not running) has ended:
// the suite stops or kills a process only after forgetting it, so an end it sees is a crash or a
// refusal to start.
func exitedOnItsOwn(name string, p *process.Process) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.Done():
		return fmt.Errorf("%s exited on its own (%v); the end of %s:\n%s", name, p.Err(), p.LogFile, process.Tail(p.LogFile, 20)) //nolint:errorlint // the exit status is shown, not wrapped: Err is nil after a clean exit
	default:
		return nil
	}
}

// Pid returns the running process id, 0 when not running.
func (c *Component) Pid() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.Pid()
}

// LogFiles returns the log file of every run so far.
func (c *Component) LogFiles() []string { return append([]string(nil), c.logs...) }

// CurrentLog returns the log file of the current (or last) run.
func (c *Component) CurrentLog() string {
	if len(c.logs) == 0 {
		return ""
	}
	return c.logs[len(c.logs)-1]
}

// MetricsAddress is where the component serves its metrics now (host:port).
func (c *Component) MetricsAddress() string { return fmt.Sprintf("127.0.0.1:%d", c.metricsPort) }

// Metrics fetches the component's Prometheus metrics text.
func (c *Component) Metrics(ctx context.Context) (string, error) {
	if c.proc == nil {
		return "", fmt.Errorf("%s is not running", c.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort), nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s /metrics answered %d", c.Name, resp.StatusCode)
	}
	return string(body), nil
}

// Goroutines returns the component's go_goroutines gauge.
func (c *Component) Goroutines(ctx context.Context) (int, error) {
	text, err := c.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	v, ok := MetricValue(text, "go_goroutines")
	if !ok {
		return 0, errors.New("no go_goroutines in the metrics")
	}
	return int(v), nil
}

// WaitServing waits until the component's metrics endpoint answers (its manager has started).
func (c *Component) WaitServing(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Exited(); err != nil {
			return err
		}
		if _, err := c.Metrics(ctx); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not serve metrics within %s: see %s", c.Name, timeout, c.CurrentLog())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// MetricValue returns the value of an unlabelled metric, or the sum over its series.
func MetricValue(text, name string) (float64, bool) {
	found, sum := false, 0.0
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		found, sum = true, sum+v
	}
	return sum, found
}

// panicLine matches what a Go panic or controller-runtime's recovered reconciler panic prints.
var panicLine = regexp.MustCompile(`(?i)\bpanic\b`)

// Panics returns the lines mentioning a panic in the component's logs, with their file.
func (c *Component) Panics() []string {
	var out []string
	for _, f := range c.logs {
		data, err := os.ReadFile(f)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: unreadable: %v", f, err))
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			if panicLine.MatchString(line) {
				out = append(out, fmt.Sprintf("%s:%d: %s", f, i+1, truncate(line, 400)))
			}
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
