package machinedeployment

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/statemetrics"
)

var (
	replicasDesc = prometheus.NewDesc("machineapi_machinedeployment_replicas",
		"A MachineDeployment's replicas by state: desired (spec.replicas), current (status.replicas), ready, available and up_to_date (status).",
		[]string{"namespace", "machinedeployment", "state"}, nil)
	rolloutDesc = prometheus.NewDesc("machineapi_machinedeployment_rollout_in_progress",
		"1 while a MachineDeployment rolls out (Progressing is True with a reason other than NewMachineSetAvailable, or False: stalled), 0 when complete or paused.",
		[]string{"namespace", "machinedeployment"}, nil)
)

// Collector returns the collector of the MachineDeployments' replica counts and rollouts, read
// from their spec and status in reader (the manager's cache) on the elected replica.
func Collector(reader client.Reader, elected <-chan struct{}) *statemetrics.Collector {
	return statemetrics.New(reader, elected, collect, replicasDesc, rolloutDesc)
}

func collect(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &v1beta1.MachineDeploymentList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		md := &list.Items[i]
		statemetrics.Replicas{
			Desired: ptr.Deref(md.Spec.Replicas, 1), Current: md.Status.Replicas, Ready: md.Status.ReadyReplicas,
			Available: md.Status.AvailableReplicas, UpToDate: md.Status.UpToDateReplicas,
		}.Send(ch, replicasDesc, md.Namespace, md.Name)
		ch <- prometheus.MustNewConstMetric(rolloutDesc, prometheus.GaugeValue, rollingOut(md), md.Namespace, md.Name)
	}
	return nil
}

// rollingOut is 1 while md's Progressing condition says a rollout runs (or stalled), else 0.
func rollingOut(md *v1beta1.MachineDeployment) float64 {
	c := meta.FindStatusCondition(md.Status.Conditions, v1beta1.ProgressingCondition)
	if c == nil || c.Status == metav1.ConditionUnknown || c.Reason == ReasonNewSetAvailable {
		return 0
	}
	return 1
}
