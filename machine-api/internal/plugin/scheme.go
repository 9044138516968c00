package plugin

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// newScheme returns the kinds the plugin reads: the Kubernetes built-in kinds and those of
// machine.machineapi.dev/v1beta1. It is the plugin's own, so that kubectl-machine links the API
// types and not the manager with its controllers.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
