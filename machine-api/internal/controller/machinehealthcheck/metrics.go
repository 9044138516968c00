package machinehealthcheck

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The health checks' metrics, labelled by the check (namespace, machinehealthcheck): as many
// series as checks, never one per Machine. The gauges are the counts of each check's last
// evaluation (its status holds only some of them), set by that evaluation and removed with the
// check; the counters count decisions.
var (
	checkLabels = []string{"namespace", "machinehealthcheck"}

	targetsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machineapi_machinehealthcheck_targets",
		Help: "Machines the health check selects, at its last evaluation.",
	}, checkLabels)
	unhealthyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machineapi_machinehealthcheck_unhealthy",
		Help: "Targets that failed a rule for its timeout (remediations in flight included), at the last evaluation.",
	}, checkLabels)
	suspectGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machineapi_machinehealthcheck_suspect",
		Help: "Targets failing a condition rule whose timeout has not passed yet, at the last evaluation.",
	}, checkLabels)
	shortCircuitedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machineapi_machinehealthcheck_short_circuited",
		Help: "1 while the check remediates nothing because more targets are failing than maxUnhealthy (or unhealthyRange) allows (RemediationAllowed=False), else 0.",
	}, checkLabels)
	retriesExhaustedGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "machineapi_machinehealthcheck_retries_exhausted",
		Help: "Unhealthy targets kept unremediated because their lineage spent spec.remediation.maxRetries (the RetriesExhausted condition names them).",
	}, checkLabels)
	remediationsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machineapi_machinehealthcheck_remediations_started_total",
		Help: "Remediations started: unhealthy Machines whose MachineSet was asked to replace them, or external remediation requests created.",
	}, checkLabels)
	remediationsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "machineapi_machinehealthcheck_remediations_refused_total",
		Help: "Unhealthy Machines the check decided not to remediate, by the reason written in their HealthCheckSucceeded condition (counted when the condition takes that reason).",
	}, append(checkLabels, "reason"))
)

func init() {
	metrics.Registry.MustRegister(targetsGauge, unhealthyGauge, suspectGauge, shortCircuitedGauge, retriesExhaustedGauge,
		remediationsStarted, remediationsRefused)
}

// refusals are the HealthCheckSucceeded reasons that say an unhealthy Machine is not remediated
// (as opposed to waiting its turn: WaitingForRemediation, WaitingForRetryPeriod).
var refusals = map[string]bool{
	ReasonRemediationNotAllowed:       true,
	ReasonRetriesExhausted:            true,
	ReasonNotOwnedByMachineSet:        true,
	ReasonRemediationTemplateNotFound: true,
	ReasonRemediationTemplateInvalid:  true,
	ReasonRemediationForbidden:        true,
}

// observeEvaluation sets the gauges of check to the counts of ev.
func observeEvaluation(check types.NamespacedName, ev *evaluation) {
	labels := []string{check.Namespace, check.Name}
	targetsGauge.WithLabelValues(labels...).Set(float64(ev.total))
	unhealthyGauge.WithLabelValues(labels...).Set(float64(ev.unhealthy))
	suspectGauge.WithLabelValues(labels...).Set(float64(ev.suspect))
	shortCircuited := 0.0
	if !ev.allowed {
		shortCircuited = 1
	}
	shortCircuitedGauge.WithLabelValues(labels...).Set(shortCircuited)
	retriesExhaustedGauge.WithLabelValues(labels...).Set(float64(len(ev.exhausted)))
}

// forgetCheck removes the series of a check that no longer exists.
func forgetCheck(check types.NamespacedName) {
	labels := prometheus.Labels{"namespace": check.Namespace, "machinehealthcheck": check.Name}
	for _, v := range []*prometheus.GaugeVec{targetsGauge, unhealthyGauge, suspectGauge, shortCircuitedGauge, retriesExhaustedGauge} {
		v.DeletePartialMatch(labels)
	}
	for _, v := range []*prometheus.CounterVec{remediationsStarted, remediationsRefused} {
		v.DeletePartialMatch(labels)
	}
}

// observeCondition counts a refusal when c, just written on a Machine of check, says it.
func observeCondition(check types.NamespacedName, c *metav1.Condition) {
	if c.Status == metav1.ConditionFalse && refusals[c.Reason] {
		remediationsRefused.WithLabelValues(check.Namespace, check.Name, c.Reason).Inc()
	}
}

// observeRemediationStarted counts a remediation check started.
func observeRemediationStarted(check types.NamespacedName) {
	remediationsStarted.WithLabelValues(check.Namespace, check.Name).Inc()
}
