package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineDrainRuleBehavior is what draining a Node does with the pods a MachineDrainRule selects.
// +kubebuilder:validation:Enum=Drain;Skip;WaitCompleted
type MachineDrainRuleBehavior string

const (
	// DrainBehaviorDrain: the pods are evicted, in the rule's order group.
	DrainBehaviorDrain MachineDrainRuleBehavior = "Drain"
	// DrainBehaviorSkip: the pods stay on the Node, and the drain does not wait for them.
	DrainBehaviorSkip MachineDrainRuleBehavior = "Skip"
	// DrainBehaviorWaitCompleted: the pods are never evicted; the drain waits until each has
	// completed (phase Succeeded or Failed) or is gone.
	DrainBehaviorWaitCompleted MachineDrainRuleBehavior = "WaitCompleted"
)

// MachineDrainRuleDrain says what draining does with the pods a rule selects.
// +kubebuilder:validation:XValidation:rule="!has(self.order) || self.behavior == 'Drain'",message="order may only be set when behavior is Drain",fieldPath=".order"
type MachineDrainRuleDrain struct {
	// behavior is Drain (evict the pods, in order group order; the default), Skip (leave them on
	// the Node and do not wait for them) or WaitCompleted (never evict them; wait until they have
	// completed).
	// +optional
	// +kubebuilder:default=Drain
	Behavior MachineDrainRuleBehavior `json:"behavior,omitempty"`

	// order is the order group of the pods, for behavior Drain: the pods of a Node are drained
	// one group at a time, lowest first, and a group has finished (its pods gone) before the next
	// one starts. Pods no rule gives an order are in group 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Order *int32 `json:"order,omitempty"`
}

// MachineDrainRuleMachines selects Machines by their labels.
type MachineDrainRuleMachines struct {
	// selector selects Machines by their labels; empty ({}) selects every Machine.
	// +required
	Selector LabelSelector `json:"selector"`
}

// MachineDrainRulePods selects pods by their labels and the labels of their namespace; a pod
// must match both.
type MachineDrainRulePods struct {
	// selector selects pods by their labels; empty ({}) selects every pod.
	// +required
	Selector LabelSelector `json:"selector"`

	// namespaceSelector selects pods by the labels of their namespace. Unset or empty selects
	// every namespace.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}

// MachineDrainRuleSpec is the desired state of a MachineDrainRule.
type MachineDrainRuleSpec struct {
	// drain says what draining does with the pods the rule selects.
	// +required
	Drain MachineDrainRuleDrain `json:"drain"`

	// machines select, by their labels, the Machines of the rule's namespace whose Nodes the
	// rule applies to: a Machine is selected when any entry's selector matches it. Empty selects
	// every Machine of the namespace.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Machines []MachineDrainRuleMachines `json:"machines,omitempty"`

	// pods select the pods, on the selected Machines' Nodes, the rule applies to: a pod is
	// selected when any entry matches it. Empty selects every pod.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Pods []MachineDrainRulePods `json:"pods,omitempty"`
}

// MachineDrainRule says how the pods on the Nodes of some Machines of its namespace are drained
// when those Machines are deleted: skipped, waited for until they complete, or evicted in order
// groups. It applies to every drain of those Nodes, machine-manager's and cluster-manager's (for
// Nodes in a workload cluster) alike.
//
// When several rules select a pod, the pod label machine.machineapi.dev/drain (skip,
// wait-completed or order-<n>) decides alone; otherwise the most protective rule wins: Skip, then
// WaitCompleted, then the Drain rule with the highest order, and among equals the rule whose name
// sorts first.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machinedrainrules,shortName=mdr,categories=machineapi
// +kubebuilder:printcolumn:name="Behavior",type=string,JSONPath=`.spec.drain.behavior`,description="What draining does with the selected pods"
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.drain.order`,description="The order group of the selected pods"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Machines",type=string,JSONPath=`.spec.machines[*].selector`,priority=1,description="Which Machines' Nodes (empty: all)"
// +kubebuilder:printcolumn:name="Pods",type=string,JSONPath=`.spec.pods[*].selector`,priority=1,description="Which pods (empty: all)"
type MachineDrainRule struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which pods on which Machines' Nodes the rule applies to, and how they are drained.
	// +required
	Spec MachineDrainRuleSpec `json:"spec"`
}

// MachineDrainRuleList is a list of MachineDrainRules.
// +kubebuilder:object:root=true
type MachineDrainRuleList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDrainRule `json:"items"`
}

func init() {
	register(&MachineDrainRule{}, &MachineDrainRuleList{})
}
