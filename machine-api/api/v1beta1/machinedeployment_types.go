package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MachineDeploymentStrategyType is how a MachineDeployment replaces Machines after a template change.
// +kubebuilder:validation:Enum=RollingUpdate;Recreate;OnDelete
type MachineDeploymentStrategyType string

const (
	// RollingUpdateStrategy replaces Machines gradually, within maxSurge and maxUnavailable.
	RollingUpdateStrategy MachineDeploymentStrategyType = "RollingUpdate"
	// RecreateStrategy removes every old Machine before creating new ones.
	RecreateStrategy MachineDeploymentStrategyType = "Recreate"
	// OnDeleteStrategy creates a new Machine only when a user deletes an old one.
	OnDeleteStrategy MachineDeploymentStrategyType = "OnDelete"
)

// MachineDeploymentStrategy says how a template change reaches the Machines.
// +kubebuilder:validation:XValidation:rule="self.type == 'RollingUpdate' || !has(self.rollingUpdate)",message="may only be set when type is RollingUpdate",fieldPath=".rollingUpdate"
type MachineDeploymentStrategy struct {
	// type is RollingUpdate (default), Recreate or OnDelete.
	// +optional
	// +kubebuilder:default=RollingUpdate
	Type MachineDeploymentStrategyType `json:"type,omitempty"`

	// rollingUpdate tunes the RollingUpdate strategy. Unset means maxSurge 1, maxUnavailable 0.
	// +optional
	RollingUpdate *MachineRollingUpdateDeployment `json:"rollingUpdate,omitempty"`
}

// MachineRollingUpdateDeployment bounds a rolling update. Only available Machines count as available.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxSurge) && has(self.maxUnavailable) && (type(self.maxSurge) == int ? self.maxSurge == 0 : self.maxSurge == '0%') && (type(self.maxUnavailable) == int ? self.maxUnavailable == 0 : self.maxUnavailable == '0%'))",message="maxSurge and maxUnavailable must not both be 0"
type MachineRollingUpdateDeployment struct {
	// maxSurge is how many Machines (or what percentage of replicas, rounded up) may exist above
	// replicas during an update.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 0 or a percentage from 0% to 100%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// maxUnavailable is how many Machines (or what percentage of replicas, rounded down) may be
	// unavailable during an update.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 0 or a percentage from 0% to 100%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// deletePolicy orders the old Machines removed during the update (see MachineSet's deletePolicy).
	// +optional
	DeletePolicy DeletePolicy `json:"deletePolicy,omitempty"`
}

// MachineDeploymentSpec is the desired state of a MachineDeployment.
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="must not be empty: an empty selector would claim every Machine in the namespace",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchLabels) || size(self.selector.matchLabels) == 0 || (has(self.template.metadata) && has(self.template.metadata.labels) && self.selector.matchLabels.all(k, k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k]))",message="matchLabels must match template.metadata.labels",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(e, e.operator == 'In' ? ((has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'NotIn' ? !((has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) && has(e.values) && self.template.metadata.labels[e.key] in e.values) : e.operator == 'Exists' ? (has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : e.operator == 'DoesNotExist' ? !(has(self.template.metadata) && has(self.template.metadata.labels) && e.key in self.template.metadata.labels) : false)",message="matchExpressions must match template.metadata.labels",fieldPath=".selector"
// +kubebuilder:validation:XValidation:rule="!has(self.progressDeadlineSeconds) || !has(self.minReadySeconds) || self.progressDeadlineSeconds > self.minReadySeconds",message="must be greater than minReadySeconds",fieldPath=".progressDeadlineSeconds"
type MachineDeploymentSpec struct {
	// replicas is the number of Machines wanted.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// selector selects the deployment's Machines; it must match the template's labels and cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="selector is immutable"
	// +required
	Selector LabelSelector `json:"selector"`

	// template describes the Machines.
	//
	// In-place fields: a change of only these reaches the existing Machines without replacing any
	// (MachineDeployment → MachineSets → Machines, and the Node where the field has one):
	//   - metadata.labels, the Machines' own labels;
	//   - metadata.annotations, the Machines' own annotations;
	//   - spec.metadata, their Nodes' labels and annotations;
	//   - spec.taints, their Nodes' taints;
	//   - spec.deletion (also on Machines that are already being deleted, so a new drain timeout
	//     takes effect on a drain in progress);
	//   - spec.lifecycleHooks (on Machines that are not being deleted: a hook cannot be added to a
	//     deleting Machine; hooks other components added to a Machine are left alone).
	// Any other change (providerSpec, versions) creates a MachineSet and replaces the Machines by
	// the strategy.
	// +required
	Template MachineTemplateSpec `json:"template"`

	// strategy says how a template change replaces Machines.
	// +optional
	// +kubebuilder:default={type: RollingUpdate}
	Strategy MachineDeploymentStrategy `json:"strategy,omitempty"`

	// minReadySeconds is how long a Machine's Node must be Ready before the Machine counts as available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`

	// machineLaunch bounds how long a Machine may take to start (see MachineSet); the deployment's
	// MachineSets get it, in place, without a rollout.
	// +optional
	MachineLaunch *MachineLaunch `json:"machineLaunch,omitempty"`

	// disruption bounds how many of the deployment's Machines, across all its MachineSets, are
	// taken away on purpose at once (rollout, MachineClass change, expiry, health-check
	// replacement, scale-down) and when (see MachineSet). The sets get it in place, without a
	// rollout. It paces on top of strategy.rollingUpdate.maxUnavailable: a rollout goes no faster
	// than either allows.
	// +optional
	Disruption *Disruption `json:"disruption,omitempty"`

	// revisionHistoryLimit is how many old, empty MachineSets to keep for rollback.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// paused stops rollouts (template changes do not reach the Machines) but not scaling.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// progressDeadlineSeconds is how long a rollout may go without progress before the
	// Progressing condition turns False with reason ProgressDeadlineExceeded.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// rollout replaces Machines whose template did not change: on a schedule (after, a date;
	// machineMaxAgeSeconds, an age) and when the MachineClass they were created from is edited.
	// Such Machines are replaced through the strategy like a template change, never more at once
	// than maxSurge and maxUnavailable allow (Recreate: all at once; OnDelete: only when a user
	// deletes them), and not while the deployment is paused.
	// +optional
	Rollout *MachineDeploymentRollout `json:"rollout,omitempty"`
}

// MachineClassChangePolicy says what an edit of a MachineClass does to the Machines of a
// MachineDeployment that were created from the class before the edit.
// +kubebuilder:validation:Enum=Rollout;Ignore
type MachineClassChangePolicy string

const (
	// MachineClassChangeRollout replaces them through the strategy.
	MachineClassChangeRollout MachineClassChangePolicy = "Rollout"
	// MachineClassChangeIgnore leaves them; only new Machines get the edited class. Their
	// UpToDate condition still says that the class changed.
	MachineClassChangeIgnore MachineClassChangePolicy = "Ignore"
)

// MachineDeploymentRollout says when Machines are replaced although the template did not change.
// A Machine's age and creation time are those of its instance: status.provisionedTime. A Machine
// whose instance does not exist yet is never replaced for its age.
type MachineDeploymentRollout struct {
	// after is a time (RFC 3339, for example 2026-05-04T12:00:00Z): once it has passed, every
	// Machine whose instance was created before it is replaced.
	// +optional
	After *metav1.Time `json:"after,omitempty"`

	// machineMaxAgeSeconds is how old a Machine's instance may get: older ones are replaced.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MachineMaxAgeSeconds *int32 `json:"machineMaxAgeSeconds,omitempty"`

	// machineClassChanges says what an edit of the MachineClass named by the template does to the
	// Machines created from the class before the edit: Rollout (unset means Rollout) replaces them;
	// Ignore leaves them, and only Machines created afterwards get the edited class.
	// +optional
	MachineClassChanges MachineClassChangePolicy `json:"machineClassChanges,omitempty"`

	// inPlace says whether a template change updates the Machines in place, through their
	// provider, instead of replacing them. Never (unset means Never) replaces them. Prefer updates
	// them in place when the provider can apply every changed field to every Machine, and replaces
	// them otherwise. Only never replaces them for a template change: a change the provider cannot
	// apply stalls the rollout, with Progressing=False/InPlaceUpdateUnsupported naming the fields. An in-place
	// update that stops workloads (a reboot) drains the Node first, under the same drain rules,
	// deadlines, maxUnavailable and disruption budgets as a replacement. Machines due for their
	// age, spec.rollout.after or a MachineClass edit are still replaced.
	// +optional
	InPlace InPlacePolicy `json:"inPlace,omitempty"`
}

// InPlacePolicy says whether a MachineDeployment's template changes update its Machines in place.
// +kubebuilder:validation:Enum=Never;Prefer;Only
type InPlacePolicy string

const (
	// InPlaceNever replaces the Machines for every template change.
	InPlaceNever InPlacePolicy = "Never"
	// InPlacePrefer updates them in place when the provider can, and replaces them otherwise.
	InPlacePrefer InPlacePolicy = "Prefer"
	// InPlaceOnly updates them in place, and stalls a rollout the provider cannot apply in place.
	InPlaceOnly InPlacePolicy = "Only"
)

// InPlace returns md's in-place policy, InPlaceNever when unset.
func (md *MachineDeployment) InPlace() InPlacePolicy {
	if md.Spec.Rollout == nil || md.Spec.Rollout.InPlace == "" {
		return InPlaceNever
	}
	return md.Spec.Rollout.InPlace
}

// MachineDeploymentStatus is the observed state of a MachineDeployment.
type MachineDeploymentStatus struct {
	// replicas is the number of Machines of every revision that are not deleting.
	// +optional
	Replicas int32 `json:"replicas"`

	// updatedReplicas counts Machines on the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// upToDateReplicas counts Machines whose UpToDate condition is True: on the current template,
	// their MachineClass unchanged since they were created, and not due for replacement by
	// spec.rollout.
	// +optional
	UpToDateReplicas int32 `json:"upToDateReplicas,omitempty"`

	// readyReplicas counts Machines whose Node is Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// availableReplicas counts Machines Ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// unavailableReplicas is replicas wanted minus availableReplicas (never negative).
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// selector is spec.selector in string form, for the scale subresource.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	Selector string `json:"selector,omitempty"`

	// conditions are the observed conditions: Available, Progressing, ...
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MachineDeployment manages MachineSets to roll out template changes to Machines.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=machinedeployments,shortName=md,categories=machineapi
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Machines wanted"
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`,description="Machines of every revision, not deleting"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Machines whose Node is Ready"
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`,description="Machines on the current template"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Machines Ready for at least minReadySeconds"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy.type`,priority=1
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,priority=1
// +kubebuilder:printcolumn:name="UpToDate",type=integer,JSONPath=`.status.upToDateReplicas`,priority=1,description="Machines whose UpToDate condition is True"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 52",message="metadata.name must be at most 52 characters: its MachineSets are named <name>-<10-character hash>"
type MachineDeployment struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec MachineDeploymentSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status MachineDeploymentStatus `json:"status,omitempty"`
}

// MachineDeploymentList is a list of MachineDeployments.
// +kubebuilder:object:root=true
type MachineDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDeployment `json:"items"`
}

func init() {
	register(&MachineDeployment{}, &MachineDeploymentList{})
}
