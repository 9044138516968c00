package remotelink

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
)

// Adapter is the nodelink.Adapter of machine-api's Machine: providerID, InternalIPs from
// status.addresses, Node metadata from spec.metadata and spec.taints, status.nodeRef and the
// NodeLinked condition. It matches what machine-manager's own linker records.
type Adapter struct{}

var _ nodelink.Adapter[*machinev1.Machine] = Adapter{}

// New implements nodelink.Adapter.
func (Adapter) New() *machinev1.Machine { return &machinev1.Machine{} }

// NewList implements nodelink.Adapter.
func (Adapter) NewList() client.ObjectList { return &machinev1.MachineList{} }

// ProviderID implements nodelink.Adapter.
func (Adapter) ProviderID(m *machinev1.Machine) string { return m.Spec.ProviderID }

// InternalIPs implements nodelink.Adapter.
func (Adapter) InternalIPs(m *machinev1.Machine) []string {
	var ips []string
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// NodeMetadata implements nodelink.Adapter.
func (Adapter) NodeMetadata(m *machinev1.Machine) nodelink.NodeMetadata {
	return nodelink.NodeMetadata{Labels: m.Spec.Metadata.Labels, Annotations: m.Spec.Metadata.Annotations, Taints: m.Spec.Taints}
}

// NodeRef implements nodelink.Adapter.
func (Adapter) NodeRef(m *machinev1.Machine) *nodelink.NodeRef {
	if m.Status.NodeRef == nil {
		return nil
	}
	return &nodelink.NodeRef{Name: m.Status.NodeRef.Name, UID: m.Status.NodeRef.UID}
}

// SetNodeRef implements nodelink.Adapter.
func (Adapter) SetNodeRef(m *machinev1.Machine, ref nodelink.NodeRef) {
	m.Status.NodeRef = &machinev1.NodeReference{Kind: "Node", Name: ref.Name, UID: ref.UID}
}

// LinkCondition implements nodelink.Adapter.
func (Adapter) LinkCondition(m *machinev1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
}

// SetLinkCondition implements nodelink.Adapter.
func (Adapter) SetLinkCondition(m *machinev1.Machine, c metav1.Condition) {
	meta.SetStatusCondition(&m.Status.Conditions, c)
}
