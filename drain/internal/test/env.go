package test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running etcd and kube-apiserver, with a clientset for them.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client kubernetes.Interface
}

// Start runs etcd and kube-apiserver from $KUBEBUILDER_ASSETS. It fails, rather than letting a
// suite skip, when they are not there: a suite that silently runs nothing protects nothing.
func Start() (*Env, error) {
	if err := checkAssets(os.Getenv("KUBEBUILDER_ASSETS")); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		// Two CPUs shared with other builds: give the API server more than the 20s default.
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	// Tests and benchmarks measure the drain, not client-side throttling.
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{env: env, Config: cfg, Client: client}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error {
	return e.env.Stop()
}

func checkAssets(dir string) error {
	const fix = "run `make controlplane` (or make test, which also exports KUBEBUILDER_ASSETS=<repo>/bin/k8s/<version>)"
	if dir == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set, so there is no kube-apiserver to test against: " + fix)
	}
	var errs []error
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		path := filepath.Join(dir, bin)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("%s is missing or not executable: %s", path, fix))
		}
	}
	return errors.Join(errs...)
}
