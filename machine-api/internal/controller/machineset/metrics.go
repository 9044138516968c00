package machineset

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/statemetrics"
)

// heldTotal counts the Machines whose deletion a disruption budget held, by the disruption's
// reason (a bounded set: v1beta1.DisruptionReason), each time a hold starts or its message changes.
var heldTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "machineapi_disruption_holds_total",
	Help: "Deletions of Machines a MachineSet held because its pool's disruption budget allowed no more at once, by reason (Rollout, ClassChange, Expired, Remediation, ScaleDown).",
}, []string{"reason"})

func init() { metrics.Registry.MustRegister(heldTotal) }

var replicasDesc = prometheus.NewDesc("machineapi_machineset_replicas",
	"A MachineSet's replicas by state: desired (spec.replicas), current (status.replicas), ready, available and up_to_date (status).",
	[]string{"namespace", "machineset", "state"}, nil)

// Collector returns the collector of the MachineSets' replica counts, read from their spec and
// status in reader (the manager's cache) on the elected replica.
func Collector(reader client.Reader, elected <-chan struct{}) *statemetrics.Collector {
	return statemetrics.New(reader, elected, collect, replicasDesc)
}

func collect(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &v1beta1.MachineSetList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		ms := &list.Items[i]
		statemetrics.Replicas{
			Desired: ptr.Deref(ms.Spec.Replicas, 1), Current: ms.Status.Replicas, Ready: ms.Status.ReadyReplicas,
			Available: ms.Status.AvailableReplicas, UpToDate: ms.Status.UpToDateReplicas,
		}.Send(ch, replicasDesc, ms.Namespace, ms.Name)
	}
	return nil
}
