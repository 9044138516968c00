package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectMeta is the part of an object's metadata a template may set: labels and annotations.
type ObjectMeta struct {
	// labels to set. On a Machine's spec.metadata they go to its Node (role labels such as
	// node-role.kubernetes.io/worker included); on a template they go to the created object.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Labels map[string]string `json:"labels,omitempty"`

	// annotations to set, as for labels.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ProviderSpec is the provider-specific configuration of a machine: either inline or from a
// MachineClass in the same namespace.
// +kubebuilder:validation:XValidation:rule="has(self.value) != has(self.machineClass)",message="set exactly one of value or machineClass"
type ProviderSpec struct {
	// value is the provider's configuration, a free-form object the provider validates.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Value *runtime.RawExtension `json:"value,omitempty"`

	// machineClass names a MachineClass in the same namespace whose spec.providerSpec is used.
	// +optional
	MachineClass *MachineClassReference `json:"machineClass,omitempty"`
}

// MachineClassReference names a MachineClass in the same namespace.
type MachineClassReference struct {
	// name of the MachineClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
}

// DeletePolicy says which machines a set removes first when it scales down, after the ones that
// are already deleting, marked with the delete-machine annotation, or unhealthy.
// +kubebuilder:validation:Enum=Random;Newest;Oldest
type DeletePolicy string

const (
	// RandomDeletePolicy removes machines in an order that is random but stable for a given set
	// of machines (a hash of each machine's UID), so repeated reconciles agree.
	RandomDeletePolicy DeletePolicy = "Random"
	// NewestDeletePolicy removes the most recently created machines first.
	NewestDeletePolicy DeletePolicy = "Newest"
	// OldestDeletePolicy removes the oldest machines first.
	OldestDeletePolicy DeletePolicy = "Oldest"
)

// LabelSelector selects objects by their labels. It has the same shape (and JSON) as
// metav1.LabelSelector, with size bounds that let the API server check, before anything is stored,
// that a set's selector matches its template. Convert it with AsLabelSelector.
type LabelSelector struct {
	// matchLabels must all be present with these values. At most 16 entries, so that the
	// API server can afford to check them against the template.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	MatchLabels map[string]string `json:"matchLabels,omitempty"`

	// matchExpressions must all be met.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one requirement of a LabelSelector, as in metav1.
type LabelSelectorRequirement struct {
	// key is the label key the requirement applies to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	Key string `json:"key,omitempty"`

	// operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	// +required
	Operator metav1.LabelSelectorOperator `json:"operator,omitempty"`

	// values for In and NotIn; empty for Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`
}

// AsLabelSelector returns the selector as a metav1.LabelSelector, for
// metav1.LabelSelectorAsSelector and friends.
func (s *LabelSelector) AsLabelSelector() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		out.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			out.MatchLabels[k] = v
		}
	}
	for _, r := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: r.Operator, Values: append([]string(nil), r.Values...),
		})
	}
	return out
}
