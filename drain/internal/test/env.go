package test

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"machineapi.dev/drain/testplane"
)

// Env is a running etcd and kube-apiserver, with a clientset for them, and kube-controller-manager
// when the suite asked for controllers.
type Env struct {
	env    *testplane.Environment
	Config *rest.Config
	Client kubernetes.Interface
}

// Options say what runs beside the API server.
type Options struct {
	// Controllers are kube-controller-manager's --controllers (testplane.DisruptionControllers for
	// the real PodDisruptionBudget status); none starts no kube-controller-manager.
	Controllers []string
}

// Start runs etcd and kube-apiserver from $KUBEBUILDER_ASSETS, and kube-controller-manager with the
// controllers opts asks for. It fails, rather than letting a suite skip, when they are not there:
// a suite that silently runs nothing protects nothing.
func Start(opts Options) (*Env, error) {
	env, err := testplane.StartEnvironment(&envtest.Environment{}, testplane.EnvironmentOptions{Controllers: opts.Controllers})
	if err != nil {
		return nil, err
	}
	// Tests and benchmarks measure the drain, not client-side throttling.
	env.Config.QPS, env.Config.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{env: env, Config: env.Config, Client: client}, nil
}

// Stop stops kube-controller-manager, the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }
