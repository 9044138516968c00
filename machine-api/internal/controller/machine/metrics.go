package machine

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

var (
	providerCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machineapi_provider_call_duration_seconds",
		Help:    "Latency of provider calls by method (Create, Update, Exists, Delete) and outcome (ok, invalid_configuration, requeue, error).",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60},
	}, []string{"method", "outcome"})

	drainDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machineapi_machine_drain_duration_seconds",
		Help:    "How long draining a machine's Node took, by outcome (drained, timeout).",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"outcome"})
)

func init() {
	metrics.Registry.MustRegister(providerCallDuration, drainDuration)
}

func observeProviderCall(method string, start, end time.Time, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case provider.IsInvalidConfiguration(err):
		outcome = "invalid_configuration"
	default:
		if _, ok := provider.AsRequeueAfter(err); ok {
			outcome = "requeue"
		} else {
			outcome = "error"
		}
	}
	providerCallDuration.WithLabelValues(method, outcome).Observe(end.Sub(start).Seconds())
}

// PhaseCollector exports machineapi_machines{namespace,phase}: the number of Machines in each
// phase, counted from the manager's cache when scraped. Reconcile errors are counted by
// controller-runtime's controller_runtime_reconcile_errors_total{controller="machine"}.
type PhaseCollector struct {
	Reader client.Reader
}

var phaseDesc = prometheus.NewDesc("machineapi_machines", "Machines by namespace and phase.", []string{"namespace", "phase"}, nil)

// Describe implements prometheus.Collector.
func (c PhaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- phaseDesc }

// Collect implements prometheus.Collector.
func (c PhaseCollector) Collect(ch chan<- prometheus.Metric) {
	list := &v1beta1.MachineList{}
	if err := c.Reader.List(context.Background(), list); err != nil {
		return
	}
	type key struct{ ns, phase string }
	counts := map[key]int{}
	for i := range list.Items {
		phase := string(list.Items[i].Status.Phase)
		if phase == "" {
			phase = string(v1beta1.MachinePhasePending)
		}
		counts[key{list.Items[i].Namespace, phase}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(phaseDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase)
	}
}
