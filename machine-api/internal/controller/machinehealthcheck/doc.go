// Package machinehealthcheck is the MachineHealthCheck controller: it judges the Machines a check
// selects and remediates the unhealthy ones, within limits that keep an outage from turning into
// the deletion of every machine.
//
// # Verdicts
//
// A target (a Machine matching spec.selector in the check's namespace) is unhealthy when, in this
// order: it has the remediate-machine annotation; its phase is Failed; status.nodeRef names a Node
// that is gone; it has had no Node for nodeStartupTimeoutSeconds (default 600, 0 disables) since
// status.provisionedTime, which never resets (since creation before it is provisioned); or one of
// spec.unhealthyConditions has held on its Node for timeoutSeconds since the condition's
// lastTransitionTime. A Machine with a Node passing every rule is healthy; one without a Node
// within the timeout is waiting, and so is one whose node linker reports that it cannot see the
// Nodes (NodeLinked=Unknown/NodesUnreachable: the API server of the workload cluster holding its
// Node is unreachable, so the Node may have registered there): nodeStartupTimeoutSeconds is not
// applied to it until the linker sees the Nodes again, and from then on it counts from
// provisioning as usual (Cluster API does not remediate what it cannot see either). Machines
// being deleted are never remediated again: those this controller deleted (marked
// HealthCheckSucceeded=False/Remediating before the delete, and remembered in memory until the
// cache shows the deletion) and those with a live external request count as remediations in
// flight, and as unhealthy; Machines deleted by anyone else count as neither healthy nor
// unhealthy.
//
// # Limits
//
// When more targets are unhealthy than maxUnhealthy allows (an integer, or a percentage of the
// targets rounded down; 40% when neither it nor unhealthyRange is set), or their number is outside
// unhealthyRange "[min-max]", nothing is remediated: RemediationAllowed turns False with the
// counts, a Warning event says so, and each unhealthy Machine's HealthCheckSucceeded says why it
// is left alone (RemediationNotAllowed). Otherwise the unhealthy Machines are remediated in name
// order while fewer than maxInFlight remediations (a percentage rounds down, at least 1) are in
// progress; the rest wait (WaitingForRemediation).
//
// # Remediation
//
// Default: the Machine is deleted, only if a MachineSet of machine.machineapi.dev controls it (the
// set replaces it; the machine controller drains it as usual); otherwise its condition says to
// remediate it by hand (NotOwnedByMachineSet). The delete carries the UID and resourceVersion of
// the Machine as judged, so a Machine that changed meanwhile is judged again first.
//
// External, when spec.remediationTemplate is set: a request of the template's kind minus
// "Template" is created from its spec.template (spec, labels, annotations), named after the
// Machine, in its namespace, owned by it; it is deleted once the Machine is healthy again. The
// kinds are the user's, so no RBAC marker can grant them: give the manager get on the template
// kind and list, create and delete on the request kind. A missing or unusable template, or a
// missing permission, leaves the Machines unremediated with a reason saying so
// (RemediationTemplateNotFound, RemediationTemplateInvalid, RemediationForbidden), a Warning event,
// and another try after templateRetry. Requests are listed (metadata only) and the template read
// from the API server, once per reconcile: their kinds are not cached.
//
// # What it writes
//
// On the check: status (expectedMachines, currentHealthy, remediationsAllowed, targets,
// observedGeneration) and the RemediationAllowed condition, with one merge patch guarded by the
// resourceVersion, nothing when unchanged. On each target: only the HealthCheckSucceeded condition,
// with a merge patch guarded by the resourceVersion (so the conditions the machine controller and
// the node linker write are carried over as read), only when it changes; Machines being deleted
// and paused Machines are left as they are. Overlapping checks (two selecting one Machine) would
// fight over that condition: do not create them.
//
// A check with the paused annotation is left alone entirely.
//
// # Requeues and cost
//
// Work is driven by events: the check, its Machines (updates that cannot change a verdict are
// dropped) and their Nodes (condition changes only; found from the Node's machine annotations or
// the machine controller's node-name index). The one timed requeue is the moment the first pending
// timeout of a target expires; there is no polling tick. Two short retries exist: conflictRetry
// after a Machine write met a conflict (the change behind it may be one the Machine watch drops),
// and templateRetry while a remediation template cannot be used. A pass lists the selected Machines from the cache and reads each one's Node,
// without deep copies, then judges them in pure code (evaluate, table-tested and benchmarked over
// 5000 Machines); only Machines whose condition changes or that are remediated cost an API call,
// at most machineWriters at once.
//
// Start reading at Reconcile in controller.go; evaluate.go, health.go and limits.go hold the
// decisions, status.go what is written, remediate.go and external.go the writes.
package machinehealthcheck
