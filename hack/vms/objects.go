package vms

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// The suite's Machines give their Nodes these labels and this taint: a node-role label, which a
// kubelet under NodeRestriction may not set itself, a pool label, and a PreferNoSchedule taint,
// which the suite's workload does not need to tolerate.
const (
	RoleLabel = "node-role.kubernetes.io/worker"
	PoolLabel = "e2e.machineapi.dev/pool"
	PoolValue = "vms"
	// AppLabel selects the suite's workload.
	AppLabel = "app"
	AppValue = "web"
	// AppImage is the node image's test workload: HTTP on :8080, two seconds of grace after
	// SIGTERM (hack/nodeimage/cmd/app).
	AppImage = "machineapi.local/app:v1"
)

// NodeLabels are the labels the Machines want on their Nodes.
func NodeLabels() map[string]string { return map[string]string{RoleLabel: "", PoolLabel: PoolValue} }

// NodeTaints are the taints the Machines want on their Nodes.
func NodeTaints() []corev1.Taint {
	return []corev1.Taint{{Key: PoolLabel, Value: PoolValue, Effect: corev1.TaintEffectPreferNoSchedule}}
}

// LoopbackSpec is a libvirt providerSpec for this host: a qemu (TCG) domain of 1 vCPU and 1 GiB
// booting image from pool, on the loopback-only user network, whose guests check the API
// server's certificate for the name kubernetes.
func LoopbackSpec(uri, pool, image string) map[string]any {
	return map[string]any{
		"uri":        uri,
		"domainType": "qemu",
		"vcpus":      1,
		"memory":     "1Gi",
		"image":      map[string]any{"pool": pool, "volume": image},
		"network":    map[string]any{"userLoopback": map[string]any{"tlsServerName": "kubernetes"}},
	}
}

// MachineClass is a class of the providerSpec spec, whose nodeTemplate has spec's vcpus and
// memory as capacity.
func MachineClass(namespace, name string, spec map[string]any) *v1beta1.MachineClass {
	raw, _ := json.Marshal(spec)
	return &v1beta1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1beta1.MachineClassSpec{
			ProviderSpec: runtime.RawExtension{Raw: raw},
			NodeTemplate: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(fmt.Sprint(spec["vcpus"])),
				corev1.ResourceMemory: resource.MustParse(fmt.Sprint(spec["memory"])),
				corev1.ResourcePods:   resource.MustParse("110"),
			}},
		},
	}
}

// MachineDeployment is a deployment of replicas Machines of the class, whose Nodes get NodeLabels
// and NodeTaints.
func MachineDeployment(namespace, name, class string, replicas int32) *v1beta1.MachineDeployment {
	selector := map[string]string{PoolLabel: PoolValue}
	return &v1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1beta1.MachineDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: v1beta1.LabelSelector{MatchLabels: selector},
			Template: v1beta1.MachineTemplateSpec{
				Metadata: v1beta1.ObjectMeta{Labels: selector},
				Spec: v1beta1.MachineSpec{
					ProviderSpec: v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: class}},
					Metadata:     v1beta1.ObjectMeta{Labels: NodeLabels()},
					Taints:       machineTaints(NodeTaints()),
				},
			},
		},
	}
}

func machineTaints(taints []corev1.Taint) []v1beta1.MachineTaint {
	out := make([]v1beta1.MachineTaint, 0, len(taints))
	for _, t := range taints {
		out = append(out, v1beta1.MachineTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

// Machine is a lone Machine with the providerSpec spec inline.
func Machine(namespace, name string, spec map[string]any) *v1beta1.Machine {
	raw, _ := json.Marshal(spec)
	return &v1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
	}
}

// Workload is a Deployment of two replicas of the node image's app, tolerating nothing but what
// every pod tolerates, ready once it answers HTTP.
func Workload(namespace string) *appsv1.Deployment {
	labels := map[string]string{AppLabel: AppValue}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AppValue},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:            "app",
					Image:           AppImage,
					ImagePullPolicy: corev1.PullNever,
					Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{
						ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}},
						PeriodSeconds: 2,
					},
				}}},
			},
		},
	}
}

// Budget keeps at least one of the workload's pods available.
func Budget(namespace string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AppValue},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: AppValue}},
		},
	}
}

// HealthCheck judges the suite's Machines unhealthy once their Node has not been Ready for
// timeoutSeconds, and may remediate all of them (the suite runs one or two).
func HealthCheck(namespace string, timeoutSeconds int32) *v1beta1.MachineHealthCheck {
	return &v1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "vms"},
		Spec: v1beta1.MachineHealthCheckSpec{
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{PoolLabel: PoolValue}},
			UnhealthyConditions: []v1beta1.UnhealthyCondition{
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), TimeoutSeconds: timeoutSeconds},
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), TimeoutSeconds: timeoutSeconds},
			},
			MaxUnhealthy: ptr.To(intstr.FromString("100%")),
		},
	}
}
