package testmachine

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
)

// Adapter is the typed nodelink.Adapter of Machine: each method reads or sets one field.
type Adapter struct{}

var _ nodelink.Adapter[*Machine] = Adapter{}

// New returns an empty Machine.
func (Adapter) New() *Machine { return &Machine{} }

// NewList returns an empty MachineList.
func (Adapter) NewList() client.ObjectList { return &MachineList{} }

// ProviderID returns spec.providerID.
func (Adapter) ProviderID(m *Machine) string { return ptr.Deref(m.Spec.ProviderID, "") }

// InternalIPs returns the InternalIP entries of status.addresses.
func (Adapter) InternalIPs(m *Machine) []string {
	var ips []string
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// NodeMetadata returns spec.metadata and spec.taints.
func (Adapter) NodeMetadata(m *Machine) nodelink.NodeMetadata {
	return nodelink.NodeMetadata{Labels: m.Spec.Metadata.Labels, Annotations: m.Spec.Metadata.Annotations, Taints: m.Spec.Taints}
}

// NodeRef returns status.nodeRef.
func (Adapter) NodeRef(m *Machine) *nodelink.NodeRef {
	if m.Status.NodeRef == nil {
		return nil
	}
	return &nodelink.NodeRef{Name: m.Status.NodeRef.Name, UID: m.Status.NodeRef.UID}
}

// SetNodeRef sets status.nodeRef.
func (Adapter) SetNodeRef(m *Machine, ref nodelink.NodeRef) {
	m.Status.NodeRef = &NodeReference{Kind: "Node", Name: ref.Name, UID: ref.UID}
}

// LinkCondition returns the NodeLinked entry of status.conditions.
func (Adapter) LinkCondition(m *Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
}

// SetLinkCondition sets the NodeLinked entry of status.conditions.
func (Adapter) SetLinkCondition(m *Machine, c metav1.Condition) {
	meta.SetStatusCondition(&m.Status.Conditions, c)
}

// ApplyAdapter is Adapter with nodelink.LinkApplier: Machine's conditions are a map-list keyed
// by type, so the link is recorded with a server-side apply, as machine-api's adapter does.
type ApplyAdapter struct{ Adapter }

var _ nodelink.LinkApplier[*Machine] = ApplyAdapter{}

// LinkApplyConfiguration returns the apply configuration of status.nodeRef and the NodeLinked
// condition.
func (ApplyAdapter) LinkApplyConfiguration(m *Machine, ref *nodelink.NodeRef, c metav1.Condition) runtime.ApplyConfiguration {
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		panic(err) // a metav1.Condition always converts
	}
	status := map[string]any{"conditions": []any{cond}}
	if ref != nil {
		status["nodeRef"] = map[string]any{"kind": "Node", "name": ref.Name, "uid": string(ref.UID)}
	}
	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": GroupVersion.String(),
		"kind":       "Machine",
		"metadata":   map[string]any{"name": m.Name, "namespace": m.Namespace, "uid": string(m.UID)}, // nodelink always passes a machine it read
		"status":     status,
	}})
}
