// Package envtest starts a real kube-apiserver and etcd for nodelink's tests and benchmark, from
// the binaries `make controlplane` builds (found through KUBEBUILDER_ASSETS), with the test CRDs
// installed: testmachine's Machine and a Cluster API shaped cluster.x-k8s.io Machine.
package envtest

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"machineapi.dev/nodelink/internal/test/testmachine"
)

// capiMachineCRD is a minimal CRD shaped like Cluster API's cluster.x-k8s.io/v1beta1 Machine.
//
//go:embed testdata/cluster.x-k8s.io_machines.yaml
var capiMachineCRD []byte

// Environment is a running API server.
type Environment struct {
	env *crenvtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// KubeConfig is Config as a kubeconfig file's content.
	KubeConfig []byte
}

// Options choose what Start installs.
type Options struct {
	// WithoutCRDs starts a bare API server (a workload cluster only has Nodes).
	WithoutCRDs bool
	// StopTimeout is how long Stop waits for each process to exit before it kills it and
	// returns an error (default 20s). Tests that stop an API server to make it unreachable use a
	// short one: a killed API server is as unreachable as a crashed one.
	StopTimeout time.Duration
}

// CheckAssets returns an error, telling how to build them, when KUBEBUILDER_ASSETS does not hold
// kube-apiserver and etcd. Tests fail on it rather than skip: a suite that passes with zero specs
// protects nothing.
func CheckAssets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return "", errors.New("KUBEBUILDER_ASSETS is not set: run `make controlplane` (or make test), " +
			"then `KUBEBUILDER_ASSETS=<repo>/bin/k8s/<version> go test ./...`")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: run `make controlplane` (or make test): %w", dir, bin, err)
		}
	}
	return dir, nil
}

// Start starts an API server and etcd.
func Start(opts Options) (*Environment, error) {
	dir, err := CheckAssets()
	if err != nil {
		return nil, err
	}
	env := &crenvtest.Environment{BinaryAssetsDirectory: dir, ErrorIfCRDPathMissing: true, ControlPlaneStopTimeout: opts.StopTimeout}
	if !opts.WithoutCRDs {
		for _, raw := range [][]byte{testmachine.CRD, capiMachineCRD} {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
				return nil, fmt.Errorf("reading a test CRD: %w", err)
			}
			env.CRDs = append(env.CRDs, &crd)
		}
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", dir, err)
	}
	return &Environment{env: env, Config: cfg, KubeConfig: env.KubeConfig}, nil
}

// Stop stops the API server and etcd.
func (e *Environment) Stop() error { return e.env.Stop() }

// Scheme knows the built-in kinds and testmachine's Machine.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := testmachine.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
