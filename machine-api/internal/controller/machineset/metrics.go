package machineset

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/statemetrics"
)

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
