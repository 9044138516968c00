package manager_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"machineapi.dev/machine-api/statemetrics/statemetricstest"

	"machineapi.dev/cluster-api/internal/test/envtest"
	"machineapi.dev/cluster-api/manager"
	"machineapi.dev/cluster-api/provider/sim"
)

// TestMetricsAreDocumentedAndBounded: the machineapi_* metrics cluster-manager registers are
// exactly those docs/operations.md lists for it, with the labels it says, and none has a label
// that grows with the number of Machines.
func TestMetricsAreDocumentedAndBounded(t *testing.T) {
	env, err := envtest.StartManagement()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	p, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := manager.DefaultOptions()
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.SkipControllerNameValidation = true
	if _, err := manager.New(context.Background(), env.Config, p, o); err != nil {
		t.Fatal(err)
	}
	statemetricstest.Check(t, metrics.Registry.(prometheus.Collector), "../../docs/operations.md", "cluster-manager")
}
