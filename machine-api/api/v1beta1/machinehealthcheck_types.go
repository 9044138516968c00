package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultMaxUnhealthy is the limit used when neither maxUnhealthy nor unhealthyRange is set:
// remediation stops once more than 40% of the targets are unhealthy, so an outage that takes every
// node down never deletes every machine.
var DefaultMaxUnhealthy = intstr.FromString("40%")

// DefaultNodeStartupTimeoutSeconds is the node startup timeout when none is set.
const DefaultNodeStartupTimeoutSeconds int32 = 600

// UnhealthyCondition marks a Node unhealthy when its condition of this type has had this status
// for at least timeoutSeconds.
type UnhealthyCondition struct {
	// type of the Node condition, for example Ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`

	// status of the condition that counts as unhealthy: True, False or Unknown.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status string `json:"status"`

	// timeoutSeconds is how long the condition must hold, measured from its lastTransitionTime.
	// +kubebuilder:validation:Minimum=0
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// RemediationTemplateReference names the template from which an external remediation request is
// created for each unhealthy Machine (named after the Machine and owned by it).
type RemediationTemplateReference struct {
	// apiVersion of the template, group/version.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// kind of the template. The request is created with this kind minus a trailing "Template".
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// name of the template, in the health check's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MachineHealthCheckSpec is the desired state of a MachineHealthCheck.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnhealthy) && has(self.unhealthyRange))",message="maxUnhealthy and unhealthyRange are mutually exclusive: set one",fieldPath=".unhealthyRange"
type MachineHealthCheckSpec struct {
	// selector selects the Machines to check, in the health check's namespace.
	Selector LabelSelector `json:"selector"`

	// unhealthyConditions: a Node is unhealthy when any of them has held for its timeout.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`

	// nodeStartupTimeoutSeconds is how long a Machine may go without a Node, measured from when
	// its instance was provisioned (status.provisionedTime, which never resets; creation time
	// before that). 0 disables the check.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	NodeStartupTimeoutSeconds *int32 `json:"nodeStartupTimeoutSeconds,omitempty"`

	// maxUnhealthy stops all remediation while more targets than this (an integer or a percentage
	// of the targets, rounded down) are unhealthy. Unset, with unhealthyRange unset too, means 40%.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 0 or a percentage from 0% to 100%"
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// unhealthyRange allows remediation only while the number of unhealthy targets is within
	// [min-max], for example "[1-3]". Exclusive with maxUnhealthy.
	// +optional
	// +kubebuilder:validation:Pattern=`^\[[0-9]+-[0-9]+\]$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[[][0-9]+-[0-9]+[]]$') || int(self.split('-')[0].substring(1)) <= int(self.split('-')[1].split(']')[0])",message="min must not be greater than max"
	UnhealthyRange string `json:"unhealthyRange,omitempty"`

	// maxInFlight bounds how many remediations may be in progress at once (an integer or a
	// percentage of the targets, rounded down, at least 1). Unset means no bound beyond maxUnhealthy.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 1 or a percentage from 0% to 100%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// remediationTemplate switches to external remediation: instead of deleting an unhealthy
	// Machine, a request object is created from this template, and removed once the Machine is
	// healthy again.
	// +optional
	RemediationTemplate *RemediationTemplateReference `json:"remediationTemplate,omitempty"`
}

// MachineHealthCheckStatus is the observed state of a MachineHealthCheck.
type MachineHealthCheckStatus struct {
	// expectedMachines is the number of Machines the selector matches.
	// +optional
	ExpectedMachines int32 `json:"expectedMachines"`

	// currentHealthy is the number of those that are healthy.
	// +optional
	CurrentHealthy int32 `json:"currentHealthy"`

	// remediationsAllowed is how many more Machines may be remediated now, given maxUnhealthy
	// (or unhealthyRange) and maxInFlight.
	// +optional
	RemediationsAllowed int32 `json:"remediationsAllowed"`

	// targets lists the names of the checked Machines.
	// +optional
	// +listType=set
	Targets []string `json:"targets,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: RemediationAllowed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MachineHealthCheck remediates the unhealthy Machines it selects, within limits that keep an
// outage from turning into the deletion of every machine.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=machinehealthchecks,shortName=mhc,categories=machineapi
// +kubebuilder:printcolumn:name="Expected",type=integer,JSONPath=`.status.expectedMachines`,description="Machines checked"
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.currentHealthy`,description="Machines healthy"
// +kubebuilder:printcolumn:name="RemediationsAllowed",type=integer,JSONPath=`.status.remediationsAllowed`,description="Remediations allowed now"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MaxUnhealthy",type=string,JSONPath=`.spec.maxUnhealthy`,priority=1
type MachineHealthCheck struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec MachineHealthCheckSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status MachineHealthCheckStatus `json:"status,omitempty"`
}

// MachineHealthCheckList is a list of MachineHealthChecks.
// +kubebuilder:object:root=true
type MachineHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineHealthCheck `json:"items"`
}

func init() {
	register(&MachineHealthCheck{}, &MachineHealthCheckList{})
}
