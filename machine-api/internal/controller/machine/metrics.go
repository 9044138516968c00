package machine

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/statemetrics"
)

// Decisions, counted where they are taken.
var (
	providerCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machineapi_provider_call_duration_seconds",
		Help:    "Latency of provider calls by method (Create, Update, Exists, Delete, UpdateInPlace) and outcome (ok, invalid_configuration, requeue, error); its _count counts the calls.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60},
	}, []string{"method", "outcome"})

	drainDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machineapi_machine_drain_duration_seconds",
		Help:    "How long draining a machine's Node took, by outcome (drained, timeout).",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"outcome"})

	inPlaceDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machineapi_machine_inplace_update_duration_seconds",
		Help:    "How long in-place updates of instances took, from the Machine getting the new spec to the update done, by disruption (None, Drain).",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"disruption"})

	provisioningDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "machineapi_machine_provisioning_duration_seconds",
		Help:    "Time from a Machine's creation to phase Running (its Node linked and Ready).",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	})
)

func init() {
	metrics.Registry.MustRegister(providerCallDuration, drainDuration, inPlaceDuration, provisioningDuration)
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

// observeRunning records how long a Machine that has just turned Running took to get there.
func observeRunning(m *v1beta1.Machine) {
	if m.Status.LastUpdated != nil {
		provisioningDuration.Observe(statemetrics.Since(m.Status.LastUpdated.Time, m.CreationTimestamp.Time))
	}
}

// Reasons of machineapi_drains_blocked besides the drain module's causes (drain.Cause): what holds
// a deletion at the drain.
const (
	// HoldPreDrainHook: preDrain lifecycle hooks remain (step WaitingForPreDrainHooks).
	HoldPreDrainHook = "PreDrainHook"
	// HoldVolumeDetach: volumes the drain freed are still attached (step WaitingForVolumeDetach).
	HoldVolumeDetach = "VolumeDetach"
	// HoldMachineDrainRule: a MachineDrainRule of the namespace cannot be used, so nothing is
	// evicted until it is fixed.
	HoldMachineDrainRule = "MachineDrainRule"
)

// blockedCauses returns the distinct causes of a drain step's blocked pods, sorted.
func blockedCauses(res *drain.Result) []string {
	var causes []string
	for _, b := range res.Blocked {
		if !slices.Contains(causes, string(b.Cause)) {
			causes = append(causes, string(b.Cause))
		}
	}
	slices.Sort(causes)
	return causes
}

// The gauges of the Machine collector, computed from the cache at each scrape.
var (
	phaseDesc = prometheus.NewDesc("machineapi_machines",
		"Machines by namespace and phase.", []string{"namespace", "phase"}, nil)
	bySetDesc = prometheus.NewDesc("machineapi_machines_by_set",
		"Machines by the MachineSet that controls them (empty: none) and its MachineDeployment (empty: none), phase and Ready condition status (True, False, Unknown).",
		[]string{"namespace", "machinedeployment", "machineset", "phase", "ready"}, nil)
	provisioningOldestDesc = prometheus.NewDesc("machineapi_machine_provisioning_oldest_seconds",
		"Seconds since the creation of the oldest Machine of the namespace still in that phase on its way to Running (Pending, Provisioning, Provisioned), deleting Machines left out.",
		[]string{"namespace", "phase"}, nil)
	deletionsDesc = prometheus.NewDesc("machineapi_machine_deletions",
		"Machines being deleted, by the step deletion waits on (the Deleting condition's reason; NotStarted before the first).",
		[]string{"namespace", "step"}, nil)
	drainsDesc = prometheus.NewDesc("machineapi_drains_in_progress",
		"Machines whose Node is being drained (deletion step DrainingNode).", []string{"namespace"}, nil)
	blockedDesc = prometheus.NewDesc("machineapi_drains_blocked",
		"Machines whose deletion is held at the drain, by reason: a drain cause of a pod left on the Node (PodDisruptionBudget, WaitCompleted, DrainOrder, DrainFilter, EvictionError, StepDeadline), MachineDrainRule, PreDrainHook or VolumeDetach. A Machine counts once per reason.",
		[]string{"namespace", "reason"}, nil)
	blockedOldestDesc = prometheus.NewDesc("machineapi_drain_blocked_oldest_seconds",
		"For the Machines of machineapi_drains_blocked, seconds since the oldest began the step it is held at (draining: status.deletion.nodeDrainStartTime; PreDrainHook: deletion; VolumeDetach: the volume wait's start).",
		[]string{"namespace", "reason"}, nil)
)

// Collector returns the collector of the Machines' gauges (phases, readiness per set, the oldest
// provisioning Machines, deletions by step, drains in progress and what blocks them), computed
// from reader (the manager's cache) on the elected replica.
func (r *Reconciler) Collector(reader client.Reader, elected <-chan struct{}) *statemetrics.Collector {
	return statemetrics.New(reader, elected, r.collect,
		phaseDesc, bySetDesc, provisioningOldestDesc, deletionsDesc, drainsDesc, blockedDesc, blockedOldestDesc)
}

// machineState is what the collector counts, keyed by label values.
type machineState struct {
	phases      map[[2]string]int
	bySet       map[[5]string]int
	provOldest  map[[2]string]float64
	deletions   map[[2]string]int
	drains      map[string]int
	blocked     map[[2]string]int
	blockOldest map[[2]string]float64
}

func (r *Reconciler) collect(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &v1beta1.MachineList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	now := r.Clock.Now()
	st := machineState{
		phases: map[[2]string]int{}, bySet: map[[5]string]int{}, provOldest: map[[2]string]float64{},
		deletions: map[[2]string]int{}, drains: map[string]int{}, blocked: map[[2]string]int{}, blockOldest: map[[2]string]float64{},
	}
	for i := range list.Items {
		countMachine(&st, &list.Items[i], now)
	}

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for k, n := range st.phases {
		gauge(phaseDesc, float64(n), k[:]...)
	}
	for k, n := range st.bySet {
		gauge(bySetDesc, float64(n), k[:]...)
	}
	for k, age := range st.provOldest {
		gauge(provisioningOldestDesc, age, k[:]...)
	}
	for k, n := range st.deletions {
		gauge(deletionsDesc, float64(n), k[:]...)
	}
	for ns, n := range st.drains {
		gauge(drainsDesc, float64(n), ns)
	}
	for k, n := range st.blocked {
		gauge(blockedDesc, float64(n), k[:]...)
		gauge(blockedOldestDesc, st.blockOldest[k], k[:]...)
	}
	return nil
}

// countMachine adds m to st.
func countMachine(st *machineState, m *v1beta1.Machine, now time.Time) {
	ns := m.Namespace
	phase := m.Status.Phase
	if phase == "" {
		phase = v1beta1.MachinePhasePending
	}
	st.phases[[2]string{ns, string(phase)}]++
	set := ""
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "MachineSet" {
		set = ref.Name
	}
	ready := string(metav1.ConditionUnknown)
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.ReadyCondition); c != nil {
		ready = string(c.Status)
	}
	st.bySet[[5]string{ns, m.Labels[v1beta1.DeploymentNameLabel], set, string(phase), ready}]++

	if m.DeletionTimestamp.IsZero() {
		switch phase {
		case v1beta1.MachinePhasePending, v1beta1.MachinePhaseProvisioning, v1beta1.MachinePhaseProvisioned:
			oldest(st.provOldest, [2]string{ns, string(phase)}, statemetrics.Since(now, m.CreationTimestamp.Time))
		}
		return
	}

	step := "NotStarted"
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition); c != nil && c.Reason != "" {
		step = c.Reason
	}
	st.deletions[[2]string{ns, step}]++
	hold := func(reason string, since time.Time) {
		k := [2]string{ns, reason}
		st.blocked[k]++
		oldest(st.blockOldest, k, statemetrics.Since(now, since))
	}
	deleted, d := m.DeletionTimestamp.Time, m.Status.Deletion
	switch step {
	case ReasonWaitingForPreDrainHooks:
		hold(HoldPreDrainHook, deleted)
	case ReasonWaitingForVolumeDetach:
		since := deleted
		if d != nil && d.WaitForNodeVolumeDetachStartTime != nil {
			since = d.WaitForNodeVolumeDetachStartTime.Time
		}
		hold(HoldVolumeDetach, since)
	case ReasonDrainingNode:
		st.drains[ns]++
		since := deleted
		if d != nil && d.NodeDrainStartTime != nil {
			since = d.NodeDrainStartTime.Time
		}
		if d != nil {
			for _, cause := range d.DrainBlockedBy {
				hold(cause, since)
			}
		}
	}
}

// oldest keeps the largest age seen for k.
func oldest[K comparable](ages map[K]float64, k K, age float64) {
	if cur, ok := ages[k]; !ok || age > cur {
		ages[k] = age
	}
}
