package localstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Config says where the binaries are, where state lives and which loopback ports to use.
type Config struct {
	// BinDir holds kube-apiserver and etcd (bin/k8s/<version>).
	BinDir string
	// StateDir holds etcd data, certificates, logs and the kubeconfig (.local).
	StateDir string
	// APIServerPort is the kube-apiserver's secure port on 127.0.0.1.
	APIServerPort int
	// EtcdPort is etcd's client port on 127.0.0.1; the peer port is EtcdPort+1.
	EtcdPort int
	// AuditLog, when set, makes the API server log every write (verb, resource, user agent,
	// response code) to this file, at metadata level.
	AuditLog string
	// EtcdUnsafeNoFsync skips fsync in etcd (as envtest does): faster, and data may be lost if
	// the machine crashes. For benchmarks and tests, never for state you want to keep.
	EtcdUnsafeNoFsync bool
	// Log receives progress lines.
	Log io.Writer
}

// Plane is a running etcd + kube-apiserver pair.
type Plane struct {
	cfg        Config
	keys       pki
	procs      []*Process
	Kubeconfig string // path of the admin kubeconfig
	Server     string // https URL of the API server
}

// Start checks the configuration, starts etcd and kube-apiserver, waits until the API server is
// ready and writes the kubeconfig. On error nothing is left running.
func Start(ctx context.Context, cfg Config) (*Plane, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := preflight(cfg); err != nil {
		return nil, err
	}
	p := &Plane{
		cfg:        cfg,
		keys:       pki{dir: filepath.Join(cfg.StateDir, "pki")},
		Kubeconfig: filepath.Join(cfg.StateDir, "kubeconfig"),
		Server:     fmt.Sprintf("https://127.0.0.1:%d", cfg.APIServerPort),
	}
	keys := pki{dir: filepath.Join(cfg.StateDir, "pki")}
	if err := keys.ensure(); err != nil {
		return nil, fmt.Errorf("creating certificates in %s: %w", keys.dir, err)
	}
	logDir := filepath.Join(cfg.StateDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", cfg.EtcdPort)
	etcdArgs := []string{
		"--name=machineapi-local",
		"--data-dir=" + filepath.Join(cfg.StateDir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", cfg.EtcdPort+1),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", cfg.EtcdPort+1),
		fmt.Sprintf("--initial-cluster=machineapi-local=http://127.0.0.1:%d", cfg.EtcdPort+1),
		"--listen-metrics-urls=",
		"--log-level=warn",
	}
	if cfg.EtcdUnsafeNoFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync=true")
	}
	etcd, err := StartProcess("etcd", filepath.Join(cfg.BinDir, "etcd"), etcdArgs, filepath.Join(logDir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	p.procs = append(p.procs, etcd)
	fmt.Fprintf(cfg.Log, "etcd: started (pid %d), data in %s, log in %s\n", etcd.Pid(), filepath.Join(cfg.StateDir, "etcd"), etcd.LogFile)
	if err := waitHTTP(ctx, etcd, etcdURL+"/health", nil, 30*time.Second); err != nil {
		p.Stop()
		return nil, err
	}

	apiserverArgs := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// Loopback is refused as the kubernetes Service endpoint; nothing here needs it.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(cfg.APIServerPort),
		"--tls-cert-file=" + keys.servingCert(),
		"--tls-private-key-file=" + keys.servingKey(),
		"--client-ca-file=" + keys.caCert(),
		"--service-account-key-file=" + keys.serviceAccountPub(),
		"--service-account-signing-key-file=" + keys.serviceAccountKey(),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// No kube-controller-manager runs here: nothing would create the default service account
		// pods need (envtest disables the same plugin), nor remove the not-ready taint that
		// TaintNodesByCondition puts on every new Node.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--cert-dir=" + filepath.Join(cfg.StateDir, "apiserver-certs"),
	}
	if cfg.AuditLog != "" {
		policy := filepath.Join(cfg.StateDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return nil, err
		}
		apiserverArgs = append(apiserverArgs, "--audit-policy-file="+policy, "--audit-log-path="+cfg.AuditLog,
			"--audit-log-format=json", "--audit-log-maxsize=0")
	}
	apiserver, err := StartProcess("kube-apiserver", filepath.Join(cfg.BinDir, "kube-apiserver"), apiserverArgs, filepath.Join(logDir, "kube-apiserver.log"))
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.procs = append(p.procs, apiserver)
	fmt.Fprintf(cfg.Log, "kube-apiserver: started (pid %d) on %s, log in %s\n", apiserver.Pid(), p.Server, apiserver.LogFile)

	tlsCfg, err := adminTLS(keys)
	if err != nil {
		p.Stop()
		return nil, err
	}
	if err := waitHTTP(ctx, apiserver, p.Server+"/readyz", tlsCfg, 90*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	kc, err := keys.kubeconfig(p.Server)
	if err != nil {
		p.Stop()
		return nil, err
	}
	if err := os.WriteFile(p.Kubeconfig, kc, 0o600); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Processes returns etcd and kube-apiserver, in that order.
func (p *Plane) Processes() []*Process { return p.procs }

// Stop terminates the API server, then etcd, and waits for both.
func (p *Plane) Stop() {
	for i := len(p.procs) - 1; i >= 0; i-- {
		p.procs[i].Stop(15 * time.Second)
	}
	p.procs = nil
}

// Exited returns a channel that receives the first process of the plane that exits.
func (p *Plane) Exited() <-chan *Process {
	ch := make(chan *Process, len(p.procs))
	for _, proc := range p.procs {
		go func() {
			<-proc.Done()
			ch <- proc
		}()
	}
	return ch
}

func preflight(cfg Config) error {
	var errs []error
	for _, b := range []string{"etcd", "kube-apiserver"} {
		path := filepath.Join(cfg.BinDir, b)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is missing: run `make controlplane` to build it from source (~9 minutes the first time)", path))
		}
	}
	for _, port := range []struct {
		name string
		port int
		env  string
	}{
		{"kube-apiserver", cfg.APIServerPort, "APISERVER_PORT"},
		{"etcd", cfg.EtcdPort, "ETCD_PORT"},
		{"etcd peer", cfg.EtcdPort + 1, "ETCD_PORT"},
	} {
		if err := portFree(port.port); err != nil {
			errs = append(errs, fmt.Errorf("port %d on 127.0.0.1 (for %s) is already in use: stop whatever holds it (another `make run`? see `ss -ltnp | grep %d`) or choose another port with `make run %s=<port>`",
				port.port, port.name, port.port, port.env))
		}
	}
	return errors.Join(errs...)
}

func portFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func adminTLS(keys pki) (*tls.Config, error) {
	caPEM, err := os.ReadFile(keys.caCert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(keys.adminCert(), keys.adminKey())
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// waitHTTP polls url until it answers 200, the process exits, or timeout passes.
func waitHTTP(ctx context.Context, proc *Process, url string, tlsCfg *tls.Config, timeout time.Duration) error {
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
		case <-proc.Done():
			return fmt.Errorf("%s exited before it was ready (%v); the last lines of %s:\n%s", proc.Name, proc.Err(), proc.LogFile, tail(proc.LogFile, 15))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready at %s after %s; see %s", proc.Name, url, timeout, proc.LogFile)
		}
	}
}

// Process is a child process in its own process group, killed if its parent dies.
type Process struct {
	Name    string
	LogFile string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// StartProcess starts path with args, its output appended to logFile.
func StartProcess(name, path string, args []string, logFile string) (*Process, error) {
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

// Pid returns the process id.
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

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ") + "\n"
}

// auditPolicy logs writes only, at metadata level, once per request.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`
