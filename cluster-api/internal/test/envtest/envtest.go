package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Environment is a running API server.
type Environment struct {
	env *crenvtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// KubeConfig is Config as a kubeconfig file's content, what a kubeconfig Secret holds.
	KubeConfig []byte
}

// CheckAssets returns an error saying what to do when the control plane binaries are missing.
func CheckAssets() error {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or run `make controlplane` " +
			"and export KUBEBUILDER_ASSETS=<repository>/bin/k8s/1.37.2")
	}
	var errs []error
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			errs = append(errs, fmt.Errorf("%s is missing in KUBEBUILDER_ASSETS=%s: run `make controlplane` (or make test)", b, dir))
		}
	}
	return errors.Join(errs...)
}

// StartManagement starts an API server with cluster-api's CRDs (config/crd/bases) and
// machine-api's (../machine-api/config/crd/bases) installed.
func StartManagement() (*Environment, error) {
	root := moduleRoot()
	return start(&crenvtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "config", "crd", "bases"),
			filepath.Join(root, "..", "machine-api", "config", "crd", "bases"),
		},
		ErrorIfCRDPathMissing: true,
	})
}

// StartWorkload starts a bare API server, as a workload cluster whose Nodes a management cluster
// links. stopTimeout is how long Stop waits before it kills the processes: tests that stop it to
// make it unreachable use a short one (a killed API server is as unreachable as a crashed one).
func StartWorkload(stopTimeout time.Duration) (*Environment, error) {
	return start(&crenvtest.Environment{ControlPlaneStopTimeout: stopTimeout})
}

func start(env *crenvtest.Environment) (*Environment, error) {
	if err := CheckAssets(); err != nil {
		return nil, err
	}
	env.BinaryAssetsDirectory = os.Getenv("KUBEBUILDER_ASSETS")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting a test API server: %w", err)
	}
	// Tests create objects quickly; the default client-side throttle only slows them down.
	cfg.QPS, cfg.Burst = 500, 1000
	return &Environment{env: env, Config: cfg, KubeConfig: env.KubeConfig}, nil
}

// NewAdminKubeconfig returns a kubeconfig for a new administrator of the API server, with its own
// client certificate: what rotating a workload cluster's credentials produces.
func (e *Environment) NewAdminKubeconfig(name string) ([]byte, error) {
	u, err := e.env.AddUser(crenvtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return u.KubeConfig()
}

// Stop stops the API server and etcd.
func (e *Environment) Stop() error { return e.env.Stop() }

// moduleRoot is the cluster-api folder, found from this file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
