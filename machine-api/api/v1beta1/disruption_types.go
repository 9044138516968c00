package v1beta1

import "k8s.io/apimachinery/pkg/util/intstr"

// DisruptionReason is why a set takes a Machine away on purpose (a voluntary disruption). A
// Machine whose instance vanished (status.failureReason InstanceMissing) or is announced to end
// (an interruption notice) is an involuntary loss: no budget holds its deletion, but it counts
// against the budgets while it is being deleted.
// +kubebuilder:validation:Enum=Rollout;ClassChange;Expired;Remediation;ScaleDown
type DisruptionReason string

const (
	// DisruptionRollout: replaced because its MachineDeployment rolls out a new template.
	DisruptionRollout DisruptionReason = "Rollout"
	// DisruptionClassChange: replaced because the MachineClass it was created from changed.
	DisruptionClassChange DisruptionReason = "ClassChange"
	// DisruptionExpired: replaced because of spec.rollout.after or a maximum age.
	DisruptionExpired DisruptionReason = "Expired"
	// DisruptionRemediation: replaced because a MachineHealthCheck judged it unhealthy.
	DisruptionRemediation DisruptionReason = "Remediation"
	// DisruptionScaleDown: deleted because its set's replicas were lowered, by a person or the
	// cluster-autoscaler, whether the Machine was chosen by the set's deletePolicy or marked with
	// the delete-machine annotation.
	DisruptionScaleDown DisruptionReason = "ScaleDown"
)

// Disruption bounds how many of a pool's Machines may be taken away on purpose at once, and
// when: the budgets a platform team agrees with the workloads running on the pool. The pool is a
// MachineDeployment's Machines (all its sets) or a standalone MachineSet's. It applies on top of
// maxUnavailable (rollouts) and maxUnhealthy (remediation), which stay as they are. Only Machines
// with a Node count and are held: a Machine that never got one disrupts no workload. A Machine
// deleted directly (kubectl delete machine) is not held: that is a request for that deletion.
type Disruption struct {
	// budgets bound the voluntary disruptions of the pool: each budget in force whose reasons
	// include a disruption's reason bounds it, and the most restrictive wins. Machines being
	// deleted count against every budget, whatever their reason. Empty: no bound beyond
	// maxUnavailable and maxUnhealthy.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Budgets []DisruptionBudget `json:"budgets,omitempty"`
}

// DisruptionBudget is one bound on a pool's voluntary disruptions.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.durationSeconds)",message="schedule and durationSeconds go together: a window opens at each schedule time and stays open durationSeconds"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.schedule)",message="timeZone applies to a schedule: set schedule too"
type DisruptionBudget struct {
	// name of the budget, in messages, events and metrics. Default: budget-<index>, counted from 0.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// nodes is how many Machines of the pool may be disrupted at once: an integer, or a
	// percentage of the pool's replicas, rounded down but never below 1 (only 0 or 0% holds
	// everything). 0 in a window freezes the reasons it names.
	// +required
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="must be an integer >= 0 or a percentage from 0% to 100%"
	Nodes intstr.IntOrString `json:"nodes"`

	// reasons are the disruptions the budget bounds. Empty: every voluntary reason.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=5
	Reasons []DisruptionReason `json:"reasons,omitempty"`

	// schedule says when the budget's window opens, in cron syntax: five fields (minute hour
	// day-of-month month day-of-week) or a descriptor such as @daily. Unset: always in force.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`

	// durationSeconds is how long the window stays open after each time the schedule names.
	// +optional
	// +kubebuilder:validation:Minimum=60
	DurationSeconds *int32 `json:"durationSeconds,omitempty"`

	// timeZone of the schedule, an IANA name such as Europe/Berlin. Default: UTC.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}
