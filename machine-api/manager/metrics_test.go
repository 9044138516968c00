package manager_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/statemetrics/statemetricstest"
)

// TestMetricsAreDocumentedAndBounded: the machineapi_* metrics machine-manager registers are
// exactly those docs/operations.md lists for it, with the labels it says, and none has a label
// that grows with the number of Machines.
func TestMetricsAreDocumentedAndBounded(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	s, err := stack.Start(env.Config, stack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	statemetricstest.Check(t, metrics.Registry.(prometheus.Collector), "../../docs/operations.md", "machine-manager")
}
