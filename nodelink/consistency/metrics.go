package consistency

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// requeuesTotal counts the reconciles a guard deferred, in the controller-runtime metrics registry
// a manager serves; the controller label is Options.Controller, a fixed name per controller.
var requeuesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "machineapi_consistency_requeues_total",
	Help: "Reconciles requeued because the controller's cache did not show its own earlier writes yet, by controller.",
}, []string{"controller"})

func init() {
	metrics.Registry.MustRegister(requeuesTotal)
}
