package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestCacheOptionsAreAccepted: every scoping the flags allow gives a cache controller-runtime
// accepts (with --namespace it refused the Node cache, and machine-manager exited at start).
func TestCacheOptionsAreAccepted(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	for _, kind := range []string{"Machine", "MachineSet", "MachineDeployment", "MachineHealthCheck", "MachineClass"} {
		mapper.Add(v1beta1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	selector, err := labels.Parse("!cluster.machineapi.dev/remote-nodes")
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"all namespaces": {},
		"one namespace":  {Namespace: "team-a"},
	} {
		t.Run(name, func(t *testing.T) {
			opts := cacheOptions(o, selector)
			opts.Scheme, opts.Mapper = Scheme(), mapper
			if _, err := cache.New(&rest.Config{Host: "https://127.0.0.1:1"}, opts); err != nil {
				t.Fatalf("controller-runtime refuses the cache: %v", err)
			}
		})
	}
}
