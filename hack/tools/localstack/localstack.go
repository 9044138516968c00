package localstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"machineapi.dev/drain/testplane/process"
)

// Config says where the binaries are, where state lives and which loopback ports to use.
type Config struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler
	// (bin/k8s/<version>).
	BinDir string
	// StateDir holds etcd data, certificates, logs and the kubeconfig (.local).
	StateDir string
	// APIServerPort is the kube-apiserver's secure port on 127.0.0.1.
	APIServerPort int
	// EtcdPort is etcd's client port on 127.0.0.1; the peer port is EtcdPort+1.
	EtcdPort int
	// ControllerManager, when not empty, starts kube-controller-manager with these --controllers:
	// "*" is every controller that is on by default, "-name" turns one off (make bench runs
	// "*,-nodelifecycle" when simulated kubelets send no heartbeats). Empty: no
	// kube-controller-manager, and nothing computes PodDisruptionBudget status, collects garbage
	// or finishes namespace deletion.
	ControllerManager []string
	// Scheduler starts kube-scheduler, which binds pending pods to Nodes.
	Scheduler bool
	// AuditLog, when set, makes the API server log every write (verb, resource, user agent,
	// response code) to this file, at metadata level.
	AuditLog string
	// NodeBootstrap readies the plane for real kubelets that join with bootstrap tokens, as the
	// libvirt provider's VMs do (make run-vms, make test-vms): kube-apiserver authenticates
	// bootstrap tokens (--enable-bootstrap-token-auth) and runs the NodeRestriction admission
	// plugin, so that a kubelet, authorized by the Node authorizer as always here, changes only its
	// own Node and pods and cannot give itself node-role labels or other restricted ones;
	// kube-controller-manager (every default controller when ControllerManager is empty) also
	// runs the two bootstrap-token controllers that are off by default (NodeBootstrapControllers).
	// The CSR approving, signing (with the local CA) and cleaning controllers are default ones.
	// ApplyNodeBootstrap applies the RBAC the flow needs. Off for make run, the fault matrix and
	// the bench, whose kubelets are simulated.
	NodeBootstrap bool
	// EtcdUnsafeNoFsync skips fsync in etcd (as envtest does): faster, and data may be lost if
	// the machine crashes. For benchmarks and tests, never for state you want to keep.
	EtcdUnsafeNoFsync bool
	// Log receives progress lines.
	Log io.Writer
}

// NodeBootstrapControllers are the controllers NodeBootstrap adds to kube-controller-manager's:
// off by default, they sign the cluster-info ConfigMap with bootstrap tokens and delete expired
// tokens.
var NodeBootstrapControllers = []string{"bootstrap-signer-controller", "token-cleaner-controller"}

// controllers is kube-controller-manager's --controllers: ControllerManager, with NodeBootstrap
// every default controller when it is empty and NodeBootstrapControllers. Empty: no
// kube-controller-manager.
func (c Config) controllers() []string {
	if !c.NodeBootstrap {
		return c.ControllerManager
	}
	out := slices.Clone(c.ControllerManager)
	if len(out) == 0 {
		out = []string{"*"}
	}
	for _, name := range NodeBootstrapControllers {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// runsController reports whether the configured kube-controller-manager runs the named
// controller (one that is on by default).
func (c Config) runsController(name string) bool {
	on := false
	for _, v := range c.controllers() {
		switch v {
		case "*", name:
			on = true
		case "-" + name:
			return false
		}
	}
	return on
}

// Plane is a running control plane: etcd and kube-apiserver, and kube-controller-manager and
// kube-scheduler when configured.
type Plane struct {
	cfg        Config
	keys       pki
	Kubeconfig string // path of the admin kubeconfig
	Server     string // https URL of the API server

	mu        sync.Mutex
	procs     []*process.Process // in start order; Stop goes backwards
	apiserver *process.Process   // the API server running now (nil after KillAPIServer)
	restarts  int
}

// Start checks the configuration, starts etcd and kube-apiserver, waits until the API server is
// ready, writes the kubeconfig, and then starts kube-controller-manager and kube-scheduler when
// configured and waits until they answer their health checks. On error nothing is left running.
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
	remade, err := p.keys.ensure()
	if err != nil {
		return nil, fmt.Errorf("creating certificates in %s: %w", p.keys.dir, err)
	}
	if remade {
		fmt.Fprintf(cfg.Log, "certificates: made again in %s (the old set lacked the controller manager's and scheduler's); kubeconfigs copied from an earlier run no longer work\n", p.keys.dir)
	}
	if err := os.MkdirAll(p.logDir(), 0o755); err != nil {
		return nil, err
	}
	if err := p.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := p.StartAPIServer(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	kc, err := p.keys.kubeconfig(p.Server)
	if err == nil {
		err = os.WriteFile(p.Kubeconfig, kc, 0o600)
	}
	if err != nil {
		p.Stop()
		return nil, err
	}
	if err := p.startControllers(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Plane) logDir() string { return filepath.Join(p.cfg.StateDir, "logs") }

func (p *Plane) startEtcd(ctx context.Context) error {
	cfg := p.cfg
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
	etcd, err := process.Start("etcd", filepath.Join(cfg.BinDir, "etcd"), etcdArgs, filepath.Join(p.logDir(), "etcd.log"))
	if err != nil {
		return err
	}
	p.add(etcd)
	fmt.Fprintf(cfg.Log, "etcd: started (pid %d), data in %s, log in %s\n", etcd.Pid(), filepath.Join(cfg.StateDir, "etcd"), etcd.LogFile)
	if err := process.WaitHTTP(ctx, etcd, etcdURL+"/health", nil, 30*time.Second); err != nil {
		p.Stop()
		return err
	}
	return nil
}

// apiServerArgs are kube-apiserver's flags; a restarted API server gets the same.
func (p *Plane) apiServerArgs() []string {
	cfg, keys := p.cfg, p.keys
	// Admission plugins that only make sense with the controller that completes their work: the
	// ServiceAccount plugin needs the service-account controller to have made each namespace's
	// default account, and TaintNodesByCondition puts a not-ready taint on every new Node that
	// only the node lifecycle controller removes (envtest disables both for the same reason).
	var disabled []string
	if !cfg.runsController("serviceaccount") {
		disabled = append(disabled, "ServiceAccount")
	}
	if !cfg.runsController("nodelifecycle") {
		disabled = append(disabled, "TaintNodesByCondition")
	}
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", cfg.EtcdPort),
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
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--cert-dir=" + filepath.Join(cfg.StateDir, "apiserver-certs"),
	}
	if len(disabled) > 0 {
		args = append(args, "--disable-admission-plugins="+strings.Join(disabled, ","))
	}
	if cfg.NodeBootstrap {
		args = append(args, "--enable-bootstrap-token-auth=true", "--enable-admission-plugins=NodeRestriction")
	}
	if cfg.AuditLog != "" {
		args = append(args, "--audit-policy-file="+filepath.Join(cfg.StateDir, "audit-policy.yaml"), "--audit-log-path="+cfg.AuditLog,
			"--audit-log-format=json", "--audit-log-maxsize=0")
	}
	return args
}

// StartAPIServer starts kube-apiserver (again, after KillAPIServer) with the same flags and
// certificates, and waits until it is ready.
func (p *Plane) StartAPIServer(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.apiserver != nil {
		return nil
	}
	if p.cfg.AuditLog != "" {
		if err := os.WriteFile(filepath.Join(p.cfg.StateDir, "audit-policy.yaml"), []byte(auditPolicy), 0o644); err != nil {
			return err
		}
	}
	logFile := filepath.Join(p.logDir(), "kube-apiserver.log")
	if p.restarts > 0 {
		logFile = filepath.Join(p.logDir(), fmt.Sprintf("kube-apiserver-restart-%d.log", p.restarts))
	}
	p.restarts++
	apiserver, err := process.Start("kube-apiserver", filepath.Join(p.cfg.BinDir, "kube-apiserver"), p.apiServerArgs(), logFile)
	if err != nil {
		return err
	}
	p.apiserver = apiserver
	p.procs = append(p.procs, apiserver)
	fmt.Fprintf(p.cfg.Log, "kube-apiserver: started (pid %d) on %s, log in %s\n", apiserver.Pid(), p.Server, apiserver.LogFile)
	tlsCfg, err := adminTLS(p.keys)
	if err != nil {
		return err
	}
	return process.WaitHTTP(ctx, apiserver, p.Server+"/readyz", tlsCfg, 90*time.Second)
}

// KillAPIServer kills the API server with SIGKILL (no graceful shutdown) and waits for it to exit;
// etcd and the controllers keep running. StartAPIServer brings it back.
func (p *Plane) KillAPIServer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.apiserver == nil {
		return
	}
	_ = syscall.Kill(-p.apiserver.Pid(), syscall.SIGKILL)
	<-p.apiserver.Done()
	p.apiserver = nil
}

// startControllers starts kube-controller-manager and kube-scheduler as configured, each with its
// own client certificate (the API server's bootstrap RBAC policy knows their user names) and a
// secure port of its own for health checks, and waits until both are healthy.
func (p *Plane) startControllers(ctx context.Context) error {
	keys := p.keys
	type component struct {
		name string
		args []string
	}
	var todo []component
	controllers := p.cfg.controllers()
	if len(controllers) > 0 {
		todo = append(todo, component{"kube-controller-manager", []string{
			"--controllers=" + strings.Join(controllers, ","),
			// Each controller uses its own service account's token (as kubeadm sets it up), so
			// the token, service-account and RBAC machinery is exercised like in a real cluster;
			// the private key is the one the API server verifies tokens with.
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + keys.serviceAccountKey(),
			"--root-ca-file=" + keys.caCert(),
			"--cluster-signing-cert-file=" + keys.caCert(),
			"--cluster-signing-key-file=" + keys.caKey(),
		}})
	}
	if p.cfg.Scheduler {
		todo = append(todo, component{"kube-scheduler", nil})
	}
	for _, c := range todo {
		kc, err := keys.kubeconfigFor(p.Server, components[c.name], keys.clientCert(c.name), keys.clientKey(c.name))
		if err != nil {
			return err
		}
		kcFile := filepath.Join(p.cfg.StateDir, c.name+".kubeconfig")
		if err := os.WriteFile(kcFile, kc, 0o600); err != nil {
			return err
		}
		port, err := process.FreePort()
		if err != nil {
			return err
		}
		args := append([]string{
			"--kubeconfig=" + kcFile,
			// No authentication or authorization kubeconfig: the secure port serves only the
			// health checks (always allowed), so nothing needs to look up client CAs.
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(p.cfg.StateDir, c.name+"-certs"),
			"--leader-elect=false",
		}, c.args...)
		proc, err := process.Start(c.name, filepath.Join(p.cfg.BinDir, c.name), args, filepath.Join(p.logDir(), c.name+".log"))
		if err != nil {
			return err
		}
		p.add(proc)
		what := ""
		if c.name == "kube-controller-manager" {
			what = ", controllers " + strings.Join(controllers, ",")
		}
		fmt.Fprintf(p.cfg.Log, "%s: started (pid %d%s), log in %s\n", c.name, proc.Pid(), what, proc.LogFile)
		// The health endpoints are served with a self-signed certificate and need no client one.
		insecure := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // loopback health check of a self-signed server
		if err := process.WaitHTTP(ctx, proc, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), insecure, 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (p *Plane) add(proc *process.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.procs = append(p.procs, proc)
}

// Processes returns the processes started, in start order: etcd, kube-apiserver (every start of
// it), then kube-controller-manager and kube-scheduler when configured.
func (p *Plane) Processes() []*process.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.procs)
}

// Stop terminates the processes in reverse start order (scheduler, controller manager, API
// server, etcd) and waits for each.
func (p *Plane) Stop() {
	p.mu.Lock()
	procs := p.procs
	p.procs, p.apiserver = nil, nil
	p.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop(15 * time.Second)
	}
}

// Exited returns a channel that receives the first process of the plane that exits, other than
// an API server stopped by KillAPIServer.
func (p *Plane) Exited() <-chan *process.Process {
	procs := p.Processes()
	ch := make(chan *process.Process, len(procs))
	for _, proc := range procs {
		go func() {
			<-proc.Done()
			p.mu.Lock()
			killed := proc.Name == "kube-apiserver" && proc != p.apiserver
			p.mu.Unlock()
			if !killed {
				ch <- proc
			}
		}()
	}
	return ch
}

func preflight(cfg Config) error {
	var errs []error
	binaries := []string{"etcd", "kube-apiserver"}
	if len(cfg.controllers()) > 0 {
		binaries = append(binaries, "kube-controller-manager")
	}
	if cfg.Scheduler {
		binaries = append(binaries, "kube-scheduler")
	}
	for _, b := range binaries {
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

// FreePortPair returns a port p such that p and p+1 are both free (etcd's client and peer ports).
func FreePortPair() (int, error) {
	for range 50 {
		p, err := process.FreePort()
		if err != nil {
			return 0, err
		}
		if portFree(p+1) == nil {
			return p, nil
		}
	}
	return 0, errors.New("no two consecutive free ports on 127.0.0.1")
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

// auditPolicy logs writes only, at metadata level, once per request.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`
