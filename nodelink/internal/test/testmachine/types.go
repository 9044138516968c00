// Package testmachine is a machine-like test kind shaped like machine-api's Machine
// (test.nodelink.machineapi.dev/v1 Machine), its CRD, and its typed nodelink.Adapter — the adapter
// machine-api writes for its own Machine looks like this one.
//
// +kubebuilder:object:generate=true
// +groupName=test.nodelink.machineapi.dev
// +versionName=v1
package testmachine

import (
	_ "embed"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// GroupVersion is the test kind's API group and version.
var GroupVersion = schema.GroupVersion{Group: "test.nodelink.machineapi.dev", Version: "v1"}

var (
	// SchemeBuilder registers Machine and MachineList.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Machine{}, &MachineList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	// AddToScheme adds the test kind to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// CRD is the generated CustomResourceDefinition of Machine (YAML).
//
//go:embed crd/test.nodelink.machineapi.dev_machines.yaml
var CRD []byte

// Machine is a machine-like test object.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired machine.
	Spec MachineSpec `json:"spec,omitempty"`
	// status is the observed machine.
	Status MachineStatus `json:"status,omitempty"`
}

// MachineSpec is the desired state of a Machine.
type MachineSpec struct {
	// providerID identifies the instance, as the Node's spec.providerID does.
	// +optional
	ProviderID *string `json:"providerID,omitempty"`
	// metadata are labels and annotations for the Machine's Node.
	// +optional
	Metadata NodeMetadata `json:"metadata,omitempty"`
	// taints are taints for the Machine's Node.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// NodeMetadata are labels and annotations for a Node.
type NodeMetadata struct {
	// labels for the Node.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations for the Node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// MachineStatus is the observed state of a Machine.
type MachineStatus struct {
	// addresses of the instance.
	// +optional
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`
	// nodeRef is the Node the Machine is linked to.
	// +optional
	NodeRef *NodeReference `json:"nodeRef,omitempty"`
	// conditions of the Machine.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeReference names a Node.
type NodeReference struct {
	// kind is "Node".
	Kind string `json:"kind,omitempty"`
	// name of the Node.
	Name string `json:"name"`
	// uid of the Node.
	// +optional
	UID types.UID `json:"uid,omitempty"`
}

// MachineList is a list of Machines.
//
// +kubebuilder:object:root=true
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Machines.
	Items []Machine `json:"items"`
}
