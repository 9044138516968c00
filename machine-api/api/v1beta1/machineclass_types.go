package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NodeTemplate describes the Node a machine of a class gets, so the cluster-autoscaler can scale a
// group up from zero.
type NodeTemplate struct {
	// capacity of the Node, for example cpu: "4", memory: 16Gi.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// labels the Node will have.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Labels map[string]string `json:"labels,omitempty"`

	// taints the Node will have.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// MachineClassSpec is the shared configuration of the Machines that refer to a class.
type MachineClassSpec struct {
	// providerSpec is the provider's configuration, a free-form object the provider validates.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +required
	ProviderSpec runtime.RawExtension `json:"providerSpec"`

	// nodeTemplate describes the Node a machine of this class gets.
	// +optional
	NodeTemplate *NodeTemplate `json:"nodeTemplate,omitempty"`
}

// MachineClass is provider configuration shared by Machines (spec.providerSpec.machineClass).
// A class in use cannot be deleted until no Machine refers to it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machineclasses,shortName=mclass,categories=machineapi
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineClass struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the class's configuration.
	// +required
	Spec MachineClassSpec `json:"spec"`
}

// MachineClassList is a list of MachineClasses.
// +kubebuilder:object:root=true
type MachineClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineClass `json:"items"`
}

func init() {
	register(&MachineClass{}, &MachineClassList{})
}
