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

// DefaultMinHealthyPeriodSeconds is how long a replacement must stay healthy before its lineage's
// retry count starts over, when spec.remediation does not say.
const DefaultMinHealthyPeriodSeconds int32 = 600

// UnhealthyCondition is one rule of a health check: a target fails it when its condition of this
// type (on its Node for unhealthyConditions, on the Machine for unhealthyMachineConditions) has
// this status. It is unhealthy once the condition has held for timeoutSeconds; before that it is
// suspect, which counts against maxUnhealthy but is never remediated.
type UnhealthyCondition struct {
	// type of the condition, for example Ready (a Node condition) or InstanceHealthy (a condition
	// a provider reports on the Machine).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Type string `json:"type,omitempty"`

	// status of the condition that counts as unhealthy: True, False or Unknown.
	// +kubebuilder:validation:Enum=True;False;Unknown
	// +required
	Status string `json:"status,omitempty"`

	// timeoutSeconds is how long the condition must hold, measured from its lastTransitionTime,
	// before the target is unhealthy. 0: unhealthy as soon as it is seen.
	// +kubebuilder:validation:Minimum=0
	// +required
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// RemediationLimits bound how often one slot of a MachineSet is remediated. A slot's succession of
// Machines (the first one remediated, its replacement, the replacement's replacement, ...) is its
// lineage; the MachineSet counts the remediations of each lineage in annotations it sets on each
// replacement when it creates it, and the health check reads them. They apply to remediation by
// deletion; with remediationTemplate the external remediator decides on retries.
type RemediationLimits struct {
	// maxRetries is how many replacements one slot gets: once a lineage has been remediated this
	// many times, its current Machine is not remediated again but kept for inspection (the
	// RetriesExhausted condition names it). With maxRetries 2, a template that never boots makes
	// three Machines in all for a slot. 0: no Machine is replaced, only reported. Unset: no limit.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRetries *int32 `json:"maxRetries,omitempty"`

	// retryPeriodSeconds is the least time between two remediations of one lineage, measured from
	// the last one: a replacement that fails sooner waits (WaitingForRetryPeriod). 0: no wait.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	RetryPeriodSeconds *int32 `json:"retryPeriodSeconds,omitempty"`

	// minHealthyPeriodSeconds is how long a replacement must have passed the check before it
	// fails for its lineage to start over: that failure is treated like a first one, and the
	// Machine that replaces it counts one remediation. Measured from when its
	// HealthCheckSucceeded condition turned True (from when its Node was linked, when the
	// condition has turned Unknown since) to when its failure began. 0: any replacement that had
	// a healthy Node starts over.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	MinHealthyPeriodSeconds *int32 `json:"minHealthyPeriodSeconds,omitempty"`
}

// RemediationTemplateReference names the template from which an external remediation request is
// created for each unhealthy Machine (named after the Machine and owned by it).
type RemediationTemplateReference struct {
	// apiVersion of the template, group/version.
	// +kubebuilder:validation:MinLength=1
	// +required
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion,omitempty"`
	// kind of the template. The request is created with this kind minus a trailing "Template".
	// +kubebuilder:validation:MinLength=1
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`
	// name of the template, in the health check's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
}

// MachineHealthCheckSpec is the desired state of a MachineHealthCheck.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnhealthy) && has(self.unhealthyRange))",message="maxUnhealthy and unhealthyRange are mutually exclusive: set one",fieldPath=".unhealthyRange"
type MachineHealthCheckSpec struct {
	// selector selects the Machines to check, in the health check's namespace.
	// +required
	Selector LabelSelector `json:"selector"`

	// unhealthyConditions are rules on the Machine's Node: it is unhealthy when one of them has
	// held for its timeout, and suspect while one holds that has not yet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	UnhealthyConditions []UnhealthyCondition `json:"unhealthyConditions,omitempty"`

	// unhealthyMachineConditions are rules on the Machine's own conditions (for example one its
	// provider reports), judged like unhealthyConditions from the condition's lastTransitionTime.
	// They apply whether or not the Machine has a Node yet, but a Machine still waiting for its
	// Node is not suspect: only a rule that has held for its timeout makes it unhealthy.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.type != 'HealthCheckSucceeded')",message="must not name HealthCheckSucceeded, the condition the health check itself writes"
	UnhealthyMachineConditions []UnhealthyCondition `json:"unhealthyMachineConditions,omitempty"`

	// nodeStartupTimeoutSeconds is how long a Machine may go without a Node, measured from when
	// its instance was provisioned (status.provisionedTime, which never resets; creation time
	// before that). 0 disables the check.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=0
	NodeStartupTimeoutSeconds *int32 `json:"nodeStartupTimeoutSeconds,omitempty"`

	// maxUnhealthy stops all remediation while more targets than this (an integer or a percentage
	// of the targets, rounded down) are failing: unhealthy, suspect (failing a rule whose timeout
	// has not passed yet) or being remediated. Machines waiting for their Node within
	// nodeStartupTimeoutSeconds do not count. Unset, with unhealthyRange unset too, means 40%.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 0 or a percentage from 0% to 100%"
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// unhealthyRange allows remediation only while the number of failing targets (counted as for
	// maxUnhealthy) is within [min-max], for example "[1-3]". Exclusive with maxUnhealthy.
	// +optional
	// +kubebuilder:validation:Pattern=`^\[[0-9]+-[0-9]+\]$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[[][0-9]+-[0-9]+[]]$') || int(self.split('-')[0].substring(1)) <= int(self.split('-')[1].split(']')[0])",message="min must not be greater than max"
	// +kubebuilder:validation:MinLength=1
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

	// remediation limits how often one MachineSet slot is remediated, so that a template that
	// can never become healthy does not create and delete Machines forever. Unset: no limits.
	// +optional
	Remediation *RemediationLimits `json:"remediation,omitempty"`
}

// MachineHealthCheckStatus is the observed state of a MachineHealthCheck.
type MachineHealthCheckStatus struct {
	// expectedMachines is the number of Machines the selector matches.
	// +optional
	ExpectedMachines int32 `json:"expectedMachines"`

	// currentHealthy is the number of those that pass every rule now (neither unhealthy nor
	// suspect, and with a Node).
	// +optional
	CurrentHealthy int32 `json:"currentHealthy"`

	// currentUnhealthy is the number of those that failed a rule for its timeout, the ones being
	// remediated included.
	// +optional
	CurrentUnhealthy int32 `json:"currentUnhealthy"`

	// currentSuspect is the number of those failing a condition rule whose timeout has not passed
	// yet: they count against maxUnhealthy, and are never remediated.
	// +optional
	CurrentSuspect int32 `json:"currentSuspect"`

	// retriesExhausted is the number of unhealthy Machines kept unremediated because their
	// lineage spent spec.remediation.maxRetries (the RetriesExhausted condition names them).
	// +optional
	RetriesExhausted int32 `json:"retriesExhausted"`

	// remediationsAllowed is how many more Machines may be remediated now, given maxUnhealthy
	// (or unhealthyRange) and maxInFlight.
	// +optional
	RemediationsAllowed int32 `json:"remediationsAllowed"`

	// targets lists the names of the checked Machines.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100000
	// +kubebuilder:validation:items:MaxLength=253
	Targets []string `json:"targets,omitempty"`

	// observedGeneration is the metadata.generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are the observed conditions: RemediationAllowed, and RetriesExhausted when
	// spec.remediation.maxRetries is set.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
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
// +kubebuilder:printcolumn:name="Unhealthy",type=integer,JSONPath=`.status.currentUnhealthy`,description="Machines unhealthy (being remediated included)",priority=1
// +kubebuilder:printcolumn:name="Suspect",type=integer,JSONPath=`.status.currentSuspect`,description="Machines failing a rule within its timeout",priority=1
// +kubebuilder:printcolumn:name="MaxUnhealthy",type=string,JSONPath=`.spec.maxUnhealthy`,priority=1
type MachineHealthCheck struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
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
