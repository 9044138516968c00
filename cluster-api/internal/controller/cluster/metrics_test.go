package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// TestReachable: the gauge follows WorkloadAPIReachable; a Cluster without a workload API to
// reach (no kubeconfigSecretRef), or not probed yet, has no series rather than a false 0.
func TestReachable(t *testing.T) {
	ref := &v1beta1.KubeconfigSecretReference{Name: "kubeconfig"}
	cond := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: v1beta1.WorkloadAPIReachableCondition, Status: s, Reason: "R"}}
	}
	for name, tc := range map[string]struct {
		ref   *v1beta1.KubeconfigSecretReference
		conds []metav1.Condition
		value float64
		ok    bool
	}{
		"no workload API":       {conds: cond(metav1.ConditionTrue)},
		"no condition yet":      {ref: ref},
		"reachable":             {ref: ref, conds: cond(metav1.ConditionTrue), value: 1, ok: true},
		"unreachable":           {ref: ref, conds: cond(metav1.ConditionFalse), ok: true},
		"waiting for the probe": {ref: ref, conds: cond(metav1.ConditionUnknown), ok: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := &v1beta1.Cluster{Spec: v1beta1.ClusterSpec{KubeconfigSecretRef: tc.ref}, Status: v1beta1.ClusterStatus{Conditions: tc.conds}}
			if v, ok := reachable(c); v != tc.value || ok != tc.ok {
				t.Fatalf("reachable = %v, %v; want %v, %v", v, ok, tc.value, tc.ok)
			}
		})
	}
}
