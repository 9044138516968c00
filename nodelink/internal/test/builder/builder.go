// Package builder builds test objects fluently: builder.Machine("ns", "m1").WithProviderID("sim:///1").Build().
package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"machineapi.dev/nodelink/internal/test/testmachine"
)

// MachineBuilder builds a testmachine.Machine.
type MachineBuilder struct{ m testmachine.Machine }

// Machine starts a Machine.
func Machine(namespace, name string) *MachineBuilder {
	return &MachineBuilder{m: testmachine.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// WithProviderID sets spec.providerID.
func (b *MachineBuilder) WithProviderID(id string) *MachineBuilder {
	b.m.Spec.ProviderID = ptr.To(id)
	return b
}

// WithInternalIP adds an InternalIP to status.addresses.
func (b *MachineBuilder) WithInternalIP(ip string) *MachineBuilder {
	b.m.Status.Addresses = append(b.m.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	return b
}

// WithLabel sets a label on the Machine itself.
func (b *MachineBuilder) WithLabel(key, value string) *MachineBuilder {
	b.m.Labels = set(b.m.Labels, key, value)
	return b
}

// WithNodeLabel adds a label the Machine wants on its Node.
func (b *MachineBuilder) WithNodeLabel(key, value string) *MachineBuilder {
	b.m.Spec.Metadata.Labels = set(b.m.Spec.Metadata.Labels, key, value)
	return b
}

// WithNodeAnnotation adds an annotation the Machine wants on its Node.
func (b *MachineBuilder) WithNodeAnnotation(key, value string) *MachineBuilder {
	b.m.Spec.Metadata.Annotations = set(b.m.Spec.Metadata.Annotations, key, value)
	return b
}

// WithTaint adds a taint the Machine wants on its Node.
func (b *MachineBuilder) WithTaint(key, value string, effect corev1.TaintEffect) *MachineBuilder {
	b.m.Spec.Taints = append(b.m.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// WithCondition adds a condition, as another controller would have written it.
func (b *MachineBuilder) WithCondition(c metav1.Condition) *MachineBuilder {
	b.m.Status.Conditions = append(b.m.Status.Conditions, c)
	return b
}

// Build returns the Machine.
func (b *MachineBuilder) Build() *testmachine.Machine { return b.m.DeepCopy() }

// NodeBuilder builds a Node.
type NodeBuilder struct{ n corev1.Node }

// Node starts a Node.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{n: corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// WithProviderID sets spec.providerID.
func (b *NodeBuilder) WithProviderID(id string) *NodeBuilder {
	b.n.Spec.ProviderID = id
	return b
}

// WithInternalIP adds an InternalIP to status.addresses.
func (b *NodeBuilder) WithInternalIP(ip string) *NodeBuilder {
	b.n.Status.Addresses = append(b.n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	return b
}

// WithLabel sets a label.
func (b *NodeBuilder) WithLabel(key, value string) *NodeBuilder {
	b.n.Labels = set(b.n.Labels, key, value)
	return b
}

// WithAnnotation sets an annotation.
func (b *NodeBuilder) WithAnnotation(key, value string) *NodeBuilder {
	b.n.Annotations = set(b.n.Annotations, key, value)
	return b
}

// WithTaint adds a taint.
func (b *NodeBuilder) WithTaint(key, value string, effect corev1.TaintEffect) *NodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Build returns the Node.
func (b *NodeBuilder) Build() *corev1.Node { return b.n.DeepCopy() }

// CAPIMachineBuilder builds an unstructured Machine of the Cluster API shaped test CRD
// (cluster.x-k8s.io/v1beta1).
type CAPIMachineBuilder struct{ u unstructured.Unstructured }

// CAPIMachine starts a Cluster API shaped Machine of cluster clusterName.
func CAPIMachine(namespace, name, clusterName string) *CAPIMachineBuilder {
	b := &CAPIMachineBuilder{u: unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1",
		"kind":       "Machine",
		"spec":       map[string]any{"clusterName": clusterName},
	}}}
	b.u.SetNamespace(namespace)
	b.u.SetName(name)
	return b
}

// WithProviderID sets spec.providerID.
func (b *CAPIMachineBuilder) WithProviderID(id string) *CAPIMachineBuilder {
	_ = unstructured.SetNestedField(b.u.Object, id, "spec", "providerID")
	return b
}

// WithInternalIP adds an InternalIP to status.addresses.
func (b *CAPIMachineBuilder) WithInternalIP(ip string) *CAPIMachineBuilder {
	list, _, _ := unstructured.NestedSlice(b.u.Object, "status", "addresses")
	list = append(list, map[string]any{"type": "InternalIP", "address": ip})
	_ = unstructured.SetNestedSlice(b.u.Object, list, "status", "addresses")
	return b
}

// WithLabel sets a label on the Machine.
func (b *CAPIMachineBuilder) WithLabel(key, value string) *CAPIMachineBuilder {
	b.u.SetLabels(set(b.u.GetLabels(), key, value))
	return b
}

// WithCondition adds a Cluster API condition (with a severity), as Cluster API's Machine
// controller would have written it.
func (b *CAPIMachineBuilder) WithCondition(condType, status, severity, reason string) *CAPIMachineBuilder {
	list, _, _ := unstructured.NestedSlice(b.u.Object, "status", "conditions")
	list = append(list, map[string]any{
		"type": condType, "status": status, "severity": severity, "reason": reason,
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	})
	_ = unstructured.SetNestedSlice(b.u.Object, list, "status", "conditions")
	return b
}

// Build returns the Machine.
func (b *CAPIMachineBuilder) Build() *unstructured.Unstructured { return b.u.DeepCopy() }

func set(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}
