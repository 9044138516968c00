package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/sim"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// ClusterBuilder builds a Cluster.
type ClusterBuilder struct{ c *v1beta1.Cluster }

// Cluster starts a Cluster without worker pools.
func Cluster(ns, name string) *ClusterBuilder {
	return &ClusterBuilder{c: &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// WithPool adds a worker pool of replicas sim machines.
func (b *ClusterBuilder) WithPool(name string, replicas int32) *ClusterBuilder {
	b.c.Spec.WorkerPools = append(b.c.Spec.WorkerPools, Pool(name, replicas))
	return b
}

// WithAutoscaledPool adds a worker pool whose size the cluster-autoscaler owns within [min, max].
func (b *ClusterBuilder) WithAutoscaledPool(name string, replicas, minSize, maxSize int32) *ClusterBuilder {
	p := Pool(name, replicas)
	p.Autoscaling = &v1beta1.WorkerPoolAutoscaling{MinSize: minSize, MaxSize: maxSize}
	b.c.Spec.WorkerPools = append(b.c.Spec.WorkerPools, p)
	return b
}

// WithKubeconfig makes the Cluster's Nodes live in the workload cluster of the Secret's kubeconfig.
func (b *ClusterBuilder) WithKubeconfig(secret string) *ClusterBuilder {
	b.c.Spec.KubeconfigSecretRef = &v1beta1.KubeconfigSecretReference{Name: secret, Key: "value"}
	return b
}

// WithProviderSpec sets the cluster provider's configuration (raw JSON).
func (b *ClusterBuilder) WithProviderSpec(raw string) *ClusterBuilder {
	b.c.Spec.ProviderSpec = &runtime.RawExtension{Raw: []byte(raw)}
	return b
}

// Build returns the Cluster.
func (b *ClusterBuilder) Build() *v1beta1.Cluster { return b.c.DeepCopy() }

// Pool returns a worker pool of replicas sim machines.
func Pool(name string, replicas int32) v1beta1.WorkerPool {
	return v1beta1.WorkerPool{
		Name:     name,
		Replicas: ptr.To(replicas),
		Template: &machinev1.MachineTemplateSpec{Spec: machinev1.MachineSpec{
			ProviderSpec: machinev1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: "small"}.Raw()},
		}},
	}
}

// MachineBuilder builds a Machine.
type MachineBuilder struct{ m *machinev1.Machine }

// Machine starts a sim Machine of no Cluster.
func Machine(ns, name string) *MachineBuilder {
	return &MachineBuilder{m: &machinev1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: machinev1.MachineSpec{
			ProviderSpec: machinev1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: "small"}.Raw()},
		},
	}}
}

// InCluster makes the Machine a member of the named Cluster.
func (b *MachineBuilder) InCluster(name string) *MachineBuilder {
	return b.WithLabel(v1beta1.ClusterNameLabel, name)
}

// Remote marks the Machine's Node as living in its Cluster's workload cluster.
func (b *MachineBuilder) Remote() *MachineBuilder {
	return b.WithLabel(v1beta1.RemoteNodesLabel, "true")
}

// WithLabel sets a label.
func (b *MachineBuilder) WithLabel(k, v string) *MachineBuilder {
	if b.m.Labels == nil {
		b.m.Labels = map[string]string{}
	}
	b.m.Labels[k] = v
	return b
}

// WithProviderID sets spec.providerID, as a provider would.
func (b *MachineBuilder) WithProviderID(id string) *MachineBuilder {
	b.m.Spec.ProviderID = id
	return b
}

// Build returns the Machine.
func (b *MachineBuilder) Build() *machinev1.Machine { return b.m.DeepCopy() }

// Node returns a Ready Node with the given providerID, as a kubelet registers it.
func Node(name, providerID string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
}
