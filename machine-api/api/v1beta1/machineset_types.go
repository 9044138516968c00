package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineTemplateSpec describes the Machines a set creates.
// +kubebuilder:validation:XValidation:rule="!has(self.spec.providerID) || size(self.spec.providerID) == 0",message="must not be set in a template: the provider sets it on each Machine",fieldPath=".spec.providerID"
type MachineTemplateSpec struct {
	// metadata of the created Machines: labels (which must match the selector) and annotations.
	// +optional
	Metadata ObjectMeta `json:"metadata,omitempty"`

	// spec of the created Machines.
	// +required
	Spec MachineSpec `json:"spec"`
}

// MachineSetSpec is the desired state of a MachineSet.
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="must not be empty: an empty selector would claim every Machine in the namespace",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || size(self.selector.matchLabels) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && self.selector.matchLabels.all(k, k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k]))",message="matchLabels must match template.metadata.labels",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? ((has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'NotIn' ? !((has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator == 'DoesNotExist' ? !(has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : false)",message="matchExpressions must match template.metadata.labels",fieldPath=".selector"
type MachineSetSpec struct {
	// replicas is the number of Machines the set keeps. Machines already deleting do not count.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// selector selects the set's Machines; it must match the template's labels and cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	// +required
	Selector LabelSelector `json:"selector"`

	// deletePolicy orders the Machines removed on scale-down, after the ones already deleting,
	// annotated with machine.machineapi.dev/delete-machine, or unhealthy.
	// +optional
	// +kubebuilder:default=Random
	DeletePolicy DeletePolicy `json:"deletePolicy,omitempty"`

	// minReadySeconds is how long a Machine's Node must be Ready before the Machine counts as available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// machineLaunch bounds how long a Machine may take to start; unset, a Machine may take as long
	// as it takes.
	// +optional
	MachineLaunch *MachineLaunch `json:"machineLaunch,omitempty"`

	// disruption bounds how many of the set's Machines it deletes on purpose at once (scale-down,
	// replacement for a health check) and when; a MachineDeployment's sets get the deployment's, in
	// place, and share its bound across all its sets. A Machine held waits, not deleted, with
	// Deleting=False/WaitingForDisruptionBudget naming the budget. Unset: no bound.
	// +optional
	Disruption *Disruption `json:"disruption,omitempty"`

	// template describes the Machines the set creates.
	// +required
	Template MachineTemplateSpec `json:"template"`
}

// MachineLaunch bounds how long a Machine may take from its creation to Running (its Node linked).
type MachineLaunch struct {
	// timeoutSeconds is how long a Machine may take to reach Running. A Machine of the set that has
	// not reached Running by then (its instance never came, or never became a Node) is replaced
	// without a MachineHealthCheck: the set creates a Machine in its place, which continues the
	// slot's lineage (the count health-check remediation keeps too), then deletes the stuck one.
	// The MachinesProvisioned condition names the oldest stuck Machine and why it is stuck.
	// +required
	// +kubebuilder:validation:Minimum=1
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// maxRetries is how many replacements one slot gets: once its lineage has been replaced this
	// many times, a Machine stuck in turn is kept for inspection, not replaced, and
	// MachinesProvisioned says so with reason LaunchRetriesExhausted. With maxRetries 3, a template
	// that never boots makes four Machines in all for a slot. 0: stuck Machines are only reported.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	MaxRetries *int32 `json:"maxRetries,omitempty"`
}

// MachineSetStatus is the observed state of a MachineSet.
type MachineSetStatus struct {
	// replicas is the number of Machines the set has that are not deleting.
	// +optional
	Replicas int32 `json:"replicas"`

	// fullyLabeledReplicas counts Machines whose labels include all of the template's labels.
	// +optional
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`

	// readyReplicas counts Machines whose Node is Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// availableReplicas counts Machines whose Node has been Ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// upToDateReplicas counts Machines whose UpToDate condition is True.
	// +optional
	UpToDateReplicas int32 `json:"upToDateReplicas,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// selector is spec.selector in string form, for the scale subresource (kubectl scale, the
	// cluster-autoscaler, HorizontalPodAutoscaler).
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Selector string `json:"selector,omitempty"`

	// conditions are the observed conditions: ScalingUp, ScalingDown, Frozen, Ready (reason MachinesReady when every wanted
	// Machine is ready), AutoscalerBounds (while the autoscaler size annotations are set) and
	// MachinesProvisioned (while spec.machineLaunch is set).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MachineSet keeps a number of identical Machines.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=machinesets,shortName=ms,categories=machineapi
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Machines wanted"
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`,description="Machines that exist and are not deleting"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Machines whose Node is Ready"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Machines Ready for at least minReadySeconds"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="DeletePolicy",type=string,JSONPath=`.spec.deletePolicy`,priority=1
// +kubebuilder:printcolumn:name="Selector",type=string,JSONPath=`.status.selector`,priority=1
// +kubebuilder:printcolumn:name="UpToDate",type=integer,JSONPath=`.status.upToDateReplicas`,priority=1,description="Machines whose UpToDate condition is True"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: it is used as the set-name label value"
type MachineSet struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec MachineSetSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status MachineSetStatus `json:"status,omitempty"`
}

// MachineSetList is a list of MachineSets.
// +kubebuilder:object:root=true
type MachineSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineSet `json:"items"`
}

func init() {
	register(&MachineSet{}, &MachineSetList{})
}
