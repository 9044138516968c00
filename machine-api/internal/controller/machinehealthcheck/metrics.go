package machinehealthcheck

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/statemetrics"
)

// The health checks' metrics, labelled by the check (namespace, machinehealthcheck): as many
// series as checks, never one per Machine. The gauges are computed from the checks' status in the
// cache when Prometheus scrapes (Collector), so they say what kubectl shows and survive a
// restart; the counters count decisions where they are taken.
var (
	checkLabels = []string{"namespace", "machinehealthcheck"}

	targetsDesc = prometheus.NewDesc("machineapi_machinehealthcheck_targets",
		"Machines the health check selects (status.expectedMachines).", checkLabels, nil)
	unhealthyDesc = prometheus.NewDesc("machineapi_machinehealthcheck_unhealthy",
		"Targets that failed a rule for its timeout, remediations in flight included (status.currentUnhealthy).", checkLabels, nil)
	suspectDesc = prometheus.NewDesc("machineapi_machinehealthcheck_suspect",
		"Targets failing a condition rule whose timeout has not passed yet (status.currentSuspect).", checkLabels, nil)
	shortCircuitedDesc = prometheus.NewDesc("machineapi_machinehealthcheck_short_circuited",
		"1 while the check remediates nothing because more targets are failing than maxUnhealthy (or unhealthyRange) allows (RemediationAllowed=False), else 0.", checkLabels, nil)
	retriesExhaustedDesc = prometheus.NewDesc("machineapi_machinehealthcheck_retries_exhausted",
		"Unhealthy targets kept unremediated because their lineage spent spec.remediation.maxRetries (status.retriesExhausted; the RetriesExhausted condition names them).", checkLabels, nil)
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
	metrics.Registry.MustRegister(remediationsStarted, remediationsRefused)
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

// Collector returns the health checks' gauges, computed from reader (the manager's cache) on
// the elected replica when Prometheus scrapes: one series per check and gauge.
func Collector(reader client.Reader, elected <-chan struct{}) *statemetrics.Collector {
	return statemetrics.New(reader, elected, collect, targetsDesc, unhealthyDesc, suspectDesc, shortCircuitedDesc, retriesExhaustedDesc)
}

func collect(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &v1beta1.MachineHealthCheckList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		mhc := &list.Items[i]
		if mhc.Status.ObservedGeneration == 0 {
			continue // never evaluated: nothing to say yet
		}
		labels := []string{mhc.Namespace, mhc.Name}
		gauge := func(d *prometheus.Desc, v int32) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
		}
		st := &mhc.Status
		gauge(targetsDesc, st.ExpectedMachines)
		gauge(unhealthyDesc, st.CurrentUnhealthy)
		gauge(suspectDesc, st.CurrentSuspect)
		gauge(retriesExhaustedDesc, st.RetriesExhausted)
		shortCircuited := int32(0)
		if c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition); c != nil && c.Status == metav1.ConditionFalse &&
			(c.Reason == ReasonTooManyUnhealthy || c.Reason == ReasonOutsideUnhealthyRange) {
			shortCircuited = 1
		}
		gauge(shortCircuitedDesc, shortCircuited)
	}
	return nil
}

// forgetCheck removes the counters of a check that no longer exists.
func forgetCheck(check types.NamespacedName) {
	labels := prometheus.Labels{"namespace": check.Namespace, "machinehealthcheck": check.Name}
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
