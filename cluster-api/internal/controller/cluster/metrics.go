package cluster

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/machine-api/statemetrics"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

var reachableDesc = prometheus.NewDesc("machineapi_cluster_workload_api_reachable",
	"1 while a Cluster's workload API server answers (WorkloadAPIReachable=True), 0 while it does not or its state is not known yet; no series for a Cluster without spec.kubeconfigSecretRef.",
	[]string{"namespace", "cluster"}, nil)

// Collector returns the collector of the Clusters' workload API reachability, read from their
// WorkloadAPIReachable condition in reader (the manager's cache) on the elected replica.
func Collector(reader client.Reader, elected <-chan struct{}) *statemetrics.Collector {
	return statemetrics.New(reader, elected, collect, reachableDesc)
}

func collect(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &v1beta1.ClusterList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		c := &list.Items[i]
		if v, ok := reachable(c); ok {
			ch <- prometheus.MustNewConstMetric(reachableDesc, prometheus.GaugeValue, v, c.Namespace, c.Name)
		}
	}
	return nil
}

// reachable is c's machineapi_cluster_workload_api_reachable value, and whether it has one.
func reachable(c *v1beta1.Cluster) (float64, bool) {
	cond := meta.FindStatusCondition(c.Status.Conditions, v1beta1.WorkloadAPIReachableCondition)
	switch {
	case c.Spec.KubeconfigSecretRef == nil || cond == nil:
		return 0, false
	case cond.Status == metav1.ConditionTrue:
		return 1, true
	}
	return 0, true
}
