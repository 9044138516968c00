package machinehealthcheck

// HealthCheckSucceeded reasons, on Machines. When a Machine is unhealthy the reason says what
// happens about it, and the message starts with why it is unhealthy (one of the causes below).
const (
	// ReasonHealthy (True): the Machine has a Node and no unhealthy condition has held for its timeout.
	ReasonHealthy = "Healthy"
	// ReasonWaitingForNode (Unknown): no Node yet; the message says by when one must register.
	ReasonWaitingForNode = "WaitingForNode"
	// ReasonSuspect (Unknown): a condition rule fails but its timeout has not passed; the message
	// says which and when the Machine turns unhealthy unless it recovers. A suspect Machine counts
	// against maxUnhealthy and is never remediated.
	ReasonSuspect = "Suspect"
	// ReasonRemediating (False): remediation has started: the Machine's MachineSet was asked to
	// replace it (its OwnerRemediated condition), or an external remediation request was created
	// for it.
	ReasonRemediating = "Remediating"
	// ReasonRemediationNotAllowed (False): too many targets are unhealthy (maxUnhealthy or
	// unhealthyRange), so nothing is remediated; the message gives the counts.
	ReasonRemediationNotAllowed = "RemediationNotAllowed"
	// ReasonWaitingForRemediation (False): maxInFlight remediations are already in progress; this
	// Machine is remediated when one of them finishes.
	ReasonWaitingForRemediation = "WaitingForRemediation"
	// ReasonRetriesExhausted (False): the Machine's lineage (its MachineSet slot) was remediated
	// spec.remediation.maxRetries times; it is kept for inspection.
	ReasonRetriesExhausted = "RetriesExhausted"
	// ReasonWaitingForRetryPeriod (False): the Machine's lineage was remediated less than
	// spec.remediation.retryPeriodSeconds ago; the message says when it may be again.
	ReasonWaitingForRetryPeriod = "WaitingForRetryPeriod"
	// ReasonNotOwnedByMachineSet (False): default remediation deletes only Machines a MachineSet
	// controls (it replaces them); this one must be remediated by hand.
	ReasonNotOwnedByMachineSet = "NotOwnedByMachineSet"
	// ReasonRemediationTemplateNotFound (False): spec.remediationTemplate names no object.
	ReasonRemediationTemplateNotFound = "RemediationTemplateNotFound"
	// ReasonRemediationTemplateInvalid (False): spec.remediationTemplate cannot make a request
	// (its kind does not end in Template, or it has no spec.template.spec).
	ReasonRemediationTemplateInvalid = "RemediationTemplateInvalid"
)

// Causes: why a Machine is unhealthy. They head HealthCheckSucceeded's message and name the
// event emitted when remediation starts.
const (
	// CauseRemediationRequested: the Machine carries the remediate-machine annotation.
	CauseRemediationRequested = "RemediationRequested"
	// CauseMachineFailed: the Machine's phase is Failed.
	CauseMachineFailed = "MachineFailed"
	// CauseNodeNotFound: status.nodeRef names a Node that no longer exists.
	CauseNodeNotFound = "NodeNotFound"
	// CauseNodeStartupTimeout: no Node nodeStartupTimeoutSeconds after the instance was provisioned.
	CauseNodeStartupTimeout = "NodeStartupTimeout"
	// CauseUnhealthyNodeCondition: one of spec.unhealthyConditions held for its timeout.
	CauseUnhealthyNodeCondition = "UnhealthyNodeCondition"
	// CauseUnhealthyMachineCondition: one of spec.unhealthyMachineConditions held for its timeout.
	CauseUnhealthyMachineCondition = "UnhealthyMachineCondition"
)

// RemediationAllowed reasons, on the MachineHealthCheck, and its event reasons.
const (
	// ReasonWithinLimits (True): the failing targets are within maxUnhealthy / unhealthyRange.
	ReasonWithinLimits = "WithinLimits"
	// ReasonResumed (True): within the limits again after a short-circuit (TooManyUnhealthy or
	// OutsideUnhealthyRange); the condition's lastTransitionTime is when remediation resumed. While
	// a target that began failing before then still fails within a timeout counted from that
	// moment, it is not remediated (a Node still coming back from the outage), and the reason
	// stays; then it turns WithinLimits.
	ReasonResumed = "Resumed"
	// ReasonTooManyUnhealthy (False): more targets are failing (unhealthy, suspect or being
	// remediated) than maxUnhealthy allows.
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
	// ReasonOutsideUnhealthyRange (False): the number of failing targets is outside unhealthyRange.
	ReasonOutsideUnhealthyRange = "OutsideUnhealthyRange"
	// ReasonInvalidSpec (False): the selector or a limit cannot be parsed; the message says which.
	ReasonInvalidSpec = "InvalidSpec"

	// EventRemediationNotAllowed (Warning, on the MachineHealthCheck): remediation stopped because
	// too many targets are failing; emitted when it stops and again when the number failing changes.
	EventRemediationNotAllowed = "RemediationNotAllowed"
	// EventRemediationTemplateUnusable (Warning, on the MachineHealthCheck): see the template reasons.
	EventRemediationTemplateUnusable = "RemediationTemplateUnusable"
)

// RetriesExhausted reasons, on the MachineHealthCheck (present when spec.remediation.maxRetries is
// set), and its event.
const (
	// ReasonRetriesSpent (True): some Machines are kept unremediated because their lineage spent
	// maxRetries; the message names them.
	ReasonRetriesSpent = "RetriesSpent"
	// ReasonWithinRetries (False): no unhealthy Machine's lineage has spent maxRetries.
	ReasonWithinRetries = "WithinRetries"

	// EventRetriesExhausted (Warning, on the MachineHealthCheck): a Machine is newly kept
	// unremediated because its lineage spent maxRetries.
	EventRetriesExhausted = "RetriesExhausted"
	// EventLineageReset (Normal, on the Machine): the Machine was healthy for
	// minHealthyPeriodSeconds, so its lineage's count of remediations was removed.
	EventLineageReset = "LineageReset"
)
