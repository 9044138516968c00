package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"machineapi.dev/hack/tools/localstack"
)

// Plane is an etcd + kube-apiserver pair from localstack whose API server can be killed and
// started again while etcd keeps running with its data: the first fault of the matrix.
type Plane struct {
	*localstack.Plane
	cfg localstack.Config

	mu        sync.Mutex
	apiserver *localstack.Process // the running API server; nil while it is stopped
	restarts  int
}

// StartPlane starts etcd and kube-apiserver with state in dir, on free loopback ports.
func StartPlane(ctx context.Context, binDir, dir string) (*Plane, error) {
	etcdPort, err := FreePortPair()
	if err != nil {
		return nil, err
	}
	apiPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	cfg := localstack.Config{BinDir: binDir, StateDir: dir, APIServerPort: apiPort, EtcdPort: etcdPort, EtcdUnsafeNoFsync: true}
	lp, err := localstack.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Plane{Plane: lp, cfg: cfg, apiserver: lp.Processes()[1]}, nil
}

// KillAPIServer kills the API server with SIGKILL (no graceful shutdown) and waits for it to exit.
// etcd keeps running.
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

// StartAPIServer starts the API server again, with the flags localstack.Start uses (the
// certificates it made under <state>/pki), and waits until it is ready.
func (p *Plane) StartAPIServer(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.apiserver != nil {
		return nil
	}
	p.restarts++
	pki := filepath.Join(p.cfg.StateDir, "pki")
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", p.cfg.EtcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(p.cfg.APIServerPort),
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--cert-dir=" + filepath.Join(p.cfg.StateDir, "apiserver-certs"),
	}
	log := filepath.Join(p.cfg.StateDir, "logs", fmt.Sprintf("kube-apiserver-restart-%d.log", p.restarts))
	proc, err := localstack.StartProcess("kube-apiserver", filepath.Join(p.cfg.BinDir, "kube-apiserver"), args, log)
	if err != nil {
		return err
	}
	p.apiserver = proc
	if err := waitReady(ctx, proc, p.Server+"/readyz", pki, 90*time.Second); err != nil {
		return err
	}
	return nil
}

// Stop stops the API server (the original or a restarted one), then etcd.
func (p *Plane) Stop() {
	p.mu.Lock()
	if p.apiserver != nil {
		p.apiserver.Stop(10 * time.Second)
		p.apiserver = nil
	}
	p.mu.Unlock()
	p.Plane.Stop()
}

// waitReady polls url with the admin certificate until it answers 200.
func waitReady(ctx context.Context, proc *localstack.Process, url, pki string, timeout time.Duration) error {
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"))
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(timeout)
	for {
		if resp, err := client.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-proc.Done():
			return fmt.Errorf("%s exited before it was ready (%v): see %s", proc.Name, proc.Err(), proc.LogFile)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready after %s: see %s", proc.Name, timeout, proc.LogFile)
		}
	}
}

// FreePort returns a TCP port free on 127.0.0.1 right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePortPair returns a port p such that p and p+1 are both free (etcd's client and peer ports).
func FreePortPair() (int, error) {
	for range 50 {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1))); err == nil {
			_ = l.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no two consecutive free ports on 127.0.0.1")
}
