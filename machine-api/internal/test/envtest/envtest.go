package envtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Environment is a running API server with the module's CRDs installed.
type Environment struct {
	*envtest.Environment
	Config *rest.Config
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

// Start checks the binaries, starts the API server and installs the CRDs found in the module's
// config/crd/bases plus any extra CRD folders or files.
func Start(extraCRDPaths ...string) (*Environment, error) {
	if err := CheckAssets(); err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     append([]string{filepath.Join(moduleRoot(), "config", "crd", "bases")}, extraCRDPaths...),
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the test API server: %w", err)
	}
	// Tests create objects quickly; the default client-side throttle only slows them down.
	cfg.QPS, cfg.Burst = 500, 1000
	if err := applyAdmissionPolicies(cfg, filepath.Join(moduleRoot(), "config", "admission")); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Environment{Environment: env, Config: cfg}, nil
}

// moduleRoot is the machine-api folder, found from this file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
