package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a child process in its own process group, killed if its parent dies.
type Process struct {
	// Name names the process in messages (kube-apiserver, etcd, machine-manager).
	Name string
	// LogFile receives its standard output and standard error.
	LogFile string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts path with args, its output appended to logFile.
func Start(name, path string, args []string, logFile string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &Process{Name: name, LogFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id, which is also the id of its process group.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit error, valid after Done is closed.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and waits.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// WaitHTTP polls url (with tlsCfg; nil for plain HTTP) until it answers 200, the process exits,
// or timeout passes. An exit is reported with the last lines of the process's log.
func WaitHTTP(ctx context.Context, p *Process, url string, tlsCfg *tls.Config, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited before it was ready (%v); the last lines of %s:\n%s", p.Name, p.Err(), p.LogFile, Tail(p.LogFile, 15)) //nolint:errorlint // the exit status is shown, not wrapped: Err is nil after a clean exit
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready at %s after %s; see %s", p.Name, url, timeout, p.LogFile)
		}
	}
}

// Tail returns the last n lines of a file, indented, each cut at 300 characters: the end of a
// process's log, for an error message.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, line := range lines {
		if len(line) > 300 {
			line = line[:300] + "..."
		}
		lines[i] = "    " + line
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a TCP port free on 127.0.0.1 right now, for a process to serve on.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
