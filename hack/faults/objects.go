package faults

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/sim"
)

// PoolLabel selects the Machines of one pool (a set or deployment of the suite).
const PoolLabel = "faults.machineapi.dev/pool"

// Template returns a Machine template of pool with the sim provider's small instance type.
func Template(pool string) v1beta1.MachineTemplateSpec {
	return v1beta1.MachineTemplateSpec{
		Metadata: v1beta1.ObjectMeta{Labels: map[string]string{PoolLabel: pool}},
		Spec: v1beta1.MachineSpec{
			ProviderSpec: v1beta1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: "small"}.Raw()},
			Metadata:     v1beta1.ObjectMeta{Labels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		},
	}
}

// MachineDeployment returns a deployment of replicas Machines of pool named name: the pool of
// MachineSet(ns, name, replicas), rolled out by a deployment (the schema's default strategy).
func MachineDeployment(ns, name string, replicas int32) *v1beta1.MachineDeployment {
	pool := MachineSet(ns, name, replicas)
	return &v1beta1.MachineDeployment{
		ObjectMeta: pool.ObjectMeta,
		Spec:       v1beta1.MachineDeploymentSpec{Replicas: pool.Spec.Replicas, Selector: pool.Spec.Selector, Template: pool.Spec.Template},
	}
}

// MachineSet returns a standalone set of replicas Machines of pool named name.
func MachineSet(ns, name string, replicas int32) *v1beta1.MachineSet {
	return &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.MachineSetSpec{
			Replicas: ptr.To(replicas),
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{PoolLabel: name}},
			Template: Template(name),
		},
	}
}

// Machine returns a standalone Machine of the sim provider.
func Machine(ns, name string) *v1beta1.Machine {
	t := Template("standalone")
	return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: t.Metadata.Labels}, Spec: t.Spec}
}

// HealthCheck returns a check of pool's Machines: Ready False or Unknown for timeout seconds is
// unhealthy, at most maxUnhealthy may be, no Node startupTimeout seconds after provisioning is
// unhealthy.
func HealthCheck(ns, name, pool string, timeout, startupTimeout int32, maxUnhealthy string) *v1beta1.MachineHealthCheck {
	return &v1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.MachineHealthCheckSpec{
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{PoolLabel: pool}},
			UnhealthyConditions: []v1beta1.UnhealthyCondition{
				{Type: "Ready", Status: "False", TimeoutSeconds: timeout},
				{Type: "Ready", Status: "Unknown", TimeoutSeconds: timeout},
			},
			NodeStartupTimeoutSeconds: ptr.To(startupTimeout),
			MaxUnhealthy:              ptr.To(intstr.FromString(maxUnhealthy)),
		},
	}
}

// ProbePod returns a pod bound to node (no scheduler runs here): the simulated kubelet starts
// it, and finishes it once it is evicted. Its labels let a PodDisruptionBudget select it.
func ProbePod(ns, node string, i int, labels map[string]string) *corev1.Pod {
	l := map[string]string{ProbeLabel: "true"}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("probe-%s-%d", node, i), Labels: l},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists},
			},
		},
	}
}

// Budget returns a PodDisruptionBudget over the pods labelled app=<app> that needs minAvailable of
// them healthy; kube-controller-manager's disruption controller computes how many disruptions it
// allows (the probe pods have no controller, so the budget uses minAvailable, not maxUnavailable).
func Budget(ns, app string, minAvailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}
