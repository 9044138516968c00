package envtest

import (
	"fmt"
	"path/filepath"
	"runtime"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"machineapi.dev/drain/testplane"
)

// Environment is a running API server with the module's CRDs and admission policies installed,
// and kube-controller-manager and kube-scheduler when the suite asked for them.
type Environment struct {
	*testplane.Environment
}

// Options say what a suite needs beside the API server.
type Options struct {
	// CRDPaths are CRD folders or files to install besides the module's config/crd/bases.
	CRDPaths []string
	// Controllers are kube-controller-manager's --controllers to run (e.g.
	// testplane.DisruptionControllers for real PodDisruptionBudget status,
	// testplane.GarbageCollectorControllers for garbage collection and namespace deletion too);
	// none starts no kube-controller-manager. See machineapi.dev/drain/testplane for what each
	// controller changes in a suite.
	Controllers []string
	// Scheduler starts kube-scheduler.
	Scheduler bool
}

// CheckAssets returns an error saying what to do when the control plane binaries are missing.
func CheckAssets() error { return testplane.CheckAssets() }

// Start checks the binaries, starts the API server and installs the CRDs found in the module's
// config/crd/bases plus any extra CRD folders or files.
func Start(extraCRDPaths ...string) (*Environment, error) {
	return StartWith(Options{CRDPaths: extraCRDPaths})
}

// StartWith is Start with kube-controller-manager and kube-scheduler as opts asks.
func StartWith(opts Options) (*Environment, error) {
	env, err := testplane.StartEnvironment(&envtest.Environment{
		CRDDirectoryPaths:     append([]string{filepath.Join(moduleRoot(), "config", "crd", "bases")}, opts.CRDPaths...),
		ErrorIfCRDPathMissing: true,
	}, testplane.EnvironmentOptions{Controllers: opts.Controllers, Scheduler: opts.Scheduler})
	if err != nil {
		return nil, fmt.Errorf("starting the test API server: %w", err)
	}
	if err := applyAdmissionPolicies(env.Config, filepath.Join(moduleRoot(), "config", "admission")); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Environment{Environment: env}, nil
}

// moduleRoot is the machine-api folder, found from this file's location.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
