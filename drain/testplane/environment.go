package testplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Environment is a test API server started by controller-runtime's envtest from the source-built
// binaries in $KUBEBUILDER_ASSETS, with kube-controller-manager and kube-scheduler beside it when
// a suite asks for them. The envtest packages of this repository's modules build theirs on it
// (their CRDs, admission policies and clients on top).
type Environment struct {
	*envtest.Environment
	// Config reaches the API server as an administrator, without client-side throttling to speak
	// of (tests create objects quickly).
	Config *rest.Config

	components *Components
	dir        string
}

// EnvironmentOptions say what runs beside the API server.
type EnvironmentOptions struct {
	// Controllers are kube-controller-manager's --controllers (DisruptionControllers,
	// GarbageCollectorControllers, "*"); none starts no kube-controller-manager.
	Controllers []string
	// Scheduler starts kube-scheduler.
	Scheduler bool
}

// CheckAssets returns an error saying what to do when $KUBEBUILDER_ASSETS does not hold
// kube-apiserver and etcd. Suites fail on it rather than skip: a suite that silently runs
// nothing protects nothing.
func CheckAssets() error {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, or run `make controlplane` " +
			"and export KUBEBUILDER_ASSETS=<repository>/bin/k8s/<version>")
	}
	var errs []error
	for _, b := range []string{"kube-apiserver", "etcd"} {
		path := filepath.Join(dir, b)
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, &MissingBinaryError{Path: path})
		}
	}
	return errors.Join(errs...)
}

// StartEnvironment checks the binaries, starts env (its CRDs and options as the caller set them;
// generous start and stop timeouts when unset, since two CPUs are shared with builds), and then
// kube-controller-manager and kube-scheduler as opts asks, as administrators of the API server. On
// error nothing is left running.
func StartEnvironment(env *envtest.Environment, opts EnvironmentOptions) (*Environment, error) {
	if err := CheckAssets(); err != nil {
		return nil, err
	}
	env.BinaryAssetsDirectory = os.Getenv("KUBEBUILDER_ASSETS")
	if env.ControlPlaneStartTimeout == 0 {
		env.ControlPlaneStartTimeout = 90 * time.Second
	}
	if env.ControlPlaneStopTimeout == 0 {
		env.ControlPlaneStopTimeout = 30 * time.Second
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", env.BinaryAssetsDirectory, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	e := &Environment{Environment: env, Config: cfg}
	if err := e.startComponents(opts); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

func (e *Environment) startComponents(opts EnvironmentOptions) error {
	if len(opts.Controllers) == 0 && !opts.Scheduler {
		return nil
	}
	user, err := e.AddUser(envtest.User{Name: "testplane", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding a user for kube-controller-manager and kube-scheduler: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if e.dir, err = os.MkdirTemp("", "testplane-"); err != nil {
		return err
	}
	e.components, err = Start(context.Background(), Options{
		BinDir:                e.BinaryAssetsDirectory,
		Kubeconfig:            kubeconfig,
		Dir:                   e.dir,
		Controllers:           opts.Controllers,
		Scheduler:             opts.Scheduler,
		ServiceAccountKeyFile: filepath.Join(e.ControlPlane.APIServer.CertDir, "sa-signer.key"),
	})
	return err
}

// Stop stops kube-scheduler, kube-controller-manager, the API server and etcd.
func (e *Environment) Stop() error {
	if e.components != nil {
		e.components.Stop()
		e.components = nil
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
		e.dir = ""
	}
	return e.Environment.Stop()
}
