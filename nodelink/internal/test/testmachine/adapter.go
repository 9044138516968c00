/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testmachine

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
