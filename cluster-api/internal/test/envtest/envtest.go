package envtest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"machineapi.dev/drain/testplane"
)

// Environment is a running API server, with kube-controller-manager when asked for.
type Environment struct {
	env *testplane.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// KubeConfig is Config as a kubeconfig file's content, what a kubeconfig Secret holds.
	KubeConfig []byte
}

// CheckAssets returns an error saying what to do when the control plane binaries are missing.
func CheckAssets() error { return testplane.CheckAssets() }

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
	}, nil)
}

// StartWorkload starts a bare API server, as a workload cluster whose Nodes a management cluster
// links, and kube-controller-manager with the given controllers (none: no kube-controller-manager;
// testplane.DisruptionControllers where drains meet PodDisruptionBudgets, whose status that
// controller computes). stopTimeout is how long Stop waits before it kills the processes: tests
// that stop it to make it unreachable use a short one (a killed API server is as unreachable as a
// crashed one).
func StartWorkload(stopTimeout time.Duration, controllers ...string) (*Environment, error) {
	return start(&crenvtest.Environment{ControlPlaneStopTimeout: stopTimeout}, controllers)
}

func start(env *crenvtest.Environment, controllers []string) (*Environment, error) {
	e, err := testplane.StartEnvironment(env, testplane.EnvironmentOptions{Controllers: controllers})
	if err != nil {
		return nil, fmt.Errorf("starting a test API server: %w", err)
	}
	return &Environment{env: e, Config: e.Config, KubeConfig: env.KubeConfig}, nil
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

// Stop stops kube-controller-manager, the API server and etcd.
func (e *Environment) Stop() error { return e.env.Stop() }

// moduleRoot is the cluster-api folder, found from this file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
