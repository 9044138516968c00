// Package machinehealthcheck is the MachineHealthCheck controller: it judges the Machines a check
// selects and remediates the unhealthy ones, within limits that keep an outage from turning into
// the deletion of every machine.
//
// # Verdicts
//
// A target (a Machine matching spec.selector in the check's namespace) is unhealthy when, in this
// order: it has the remediate-machine annotation; its phase is Failed; status.nodeRef names a Node
// that is gone; one of spec.unhealthyMachineConditions has held on the Machine for timeoutSeconds
// since the condition's lastTransitionTime; it has had no Node for nodeStartupTimeoutSeconds
// (default 600, 0 disables) since status.provisionedTime, which never resets (since creation
// before it is provisioned); or one of spec.unhealthyConditions has held on its Node for
// timeoutSeconds. A Machine with a Node that fails a condition rule (of the Node or the Machine)
// whose timeout has not passed yet is suspect (HealthCheckSucceeded=Unknown/Suspect, saying when it
// turns unhealthy); one with a Node passing every rule is healthy. One without a Node within the
// timeout is waiting, whatever its own conditions say meanwhile, and so is one whose node linker
// reports that it cannot see the Nodes (NodeLinked=Unknown/NodesUnreachable: the API server of
// the workload cluster holding its Node is unreachable, so the Node may have registered there):
// nodeStartupTimeoutSeconds is not applied to it until the linker sees the Nodes again, and from
// then on it counts from provisioning as usual (Cluster API does not remediate what it cannot see
// either). A Machine whose MachineSet this controller asked to replace it (OwnerRemediated=False,
// whether or not the set has deleted it yet) and one with a live external request count as
// remediations in flight, and as unhealthy; they are not judged again (a requested Machine no
// MachineSet controls any more is: nobody would act on the request). Machines deleted by anyone
// else count as neither healthy nor failing.
//
// # Limits
//
// The failing targets are the unhealthy ones (remediations in flight included) and the suspect
// ones. Suspects count because a correlated outage (a zone, a switch, a bad kernel rollout)
// takes Nodes down seconds apart: counting only the targets whose timeout has passed would see
// them cross it one at a time, each alone within the limit, and remediate them all one by one.
// Machines waiting for their Node do not count, so a scale-up by more than maxUnhealthy does not
// stop remediation. When more targets are failing than maxUnhealthy allows (an integer, or a
// percentage of the targets rounded down but never below 1 unless it is 0%: 40% of a pool of one
// or two allows one; 40% when neither it nor unhealthyRange is set), or
// their number is outside unhealthyRange "[min-max]", nothing is remediated: RemediationAllowed
// turns False with both counts ("6 of 10 targets failing (1 unhealthy, 5 within their timeout),
// more than maxUnhealthy 40% (4) allows; ..."), a Warning event says so (when remediation stops,
// and again each time the number failing changes, not at every reconcile), and each failing
// Machine's HealthCheckSucceeded says why it is left alone (RemediationNotAllowed for the unhealthy,
// Suspect with "meanwhile remediation is stopped" for the others; without the counts, so that an
// outage does not rewrite every Machine's condition at each change). A suspect Machine is never
// remediated. Otherwise the unhealthy Machines are remediated in name order while fewer than
// maxInFlight remediations (a percentage rounds down, at least 1) are in progress; the rest wait
// (WaitingForRemediation).
//
// When the count drops back within the limits, the Machines still failing have been failing for
// longer than their timeouts, but only because of the outage: the pass that leaves the
// short-circuit judges them again with every timeout (of a condition rule, and the startup
// timeout) counted from that moment, and RemediationAllowed turns True with reason Resumed, its
// lastTransitionTime recording the moment, for as long as a target's timeout counts from it
// (resumeOf).
// A Node that comes back seconds later is never remediated; one that never does is, a full
// timeout after remediation resumed.
//
// # Lineages and retry limits
//
// With spec.remediation set, the check reads how often each Machine's slot was remediated (its
// lineage, package lineage: the MachineSet writes the count on every replacement when it creates
// it). It remediates a Machine only while its lineage has been remediated fewer than maxRetries
// times (otherwise RetriesExhausted: the Machine is kept for inspection, the check's
// RetriesExhausted condition names it, and a Warning event says so once), and not within
// retryPeriodSeconds of the lineage's last remediation (WaitingForRetryPeriod, with a requeue
// then). A Machine that had passed the check for minHealthyPeriodSeconds (default 600) before its
// failure began (since its HealthCheckSucceeded turned True, or since its Node was linked when a
// suspect phase rewrote that condition) starts its lineage over: its failure counts as a first one,
// and the OwnerRemediated reason (RemediationRequestedLineageReset) tells the set that its
// replacement counts one remediation. The policy is retry.go (pure, table-tested). External
// remediation has no lineages.
//
// # Remediation
//
// Default: the check writes its verdict and its owner acts. It asks the MachineSet of
// machine.machineapi.dev that controls the Machine to replace it, with OwnerRemediated=False
// beside HealthCheckSucceeded=False/Remediating, in one write; the set creates the replacement
// (carrying the lineage) and deletes the Machine, which the machine controller drains as usual. A
// Machine no MachineSet controls is not remediated: its condition says to remediate it by hand
// (NotOwnedByMachineSet). The verdict that starts a remediation carries the resourceVersion of the
// Machine as judged, so a Machine that changed meanwhile is judged again first.
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
// Status is written by server-side apply under the field manager machinehealthcheck-controller
// (see package write), and nothing when unchanged. On the check: its whole status
// (expectedMachines, currentHealthy, remediationsAllowed, targets, observedGeneration, the
// RemediationAllowed condition and, with maxRetries, RetriesExhausted). On each target: only the
// HealthCheckSucceeded condition and, while its set is asked to replace it, OwnerRemediated, so it
// never overwrites nor conflicts with what the machine controller and the node linker write there
// (every later write of a requested Machine applies OwnerRemediated again, as it is: server-side
// apply would remove a condition its manager stops applying). Nothing else, no metadata and no
// finalizer: one remediation costs this controller one write, and the set one delete. The
// conditions of Machines being deleted and of paused Machines are left as they are. Overlapping
// checks (two selecting one Machine) would fight over those conditions: do not create them.
//
// A check with the paused annotation is left alone entirely.
//
// # Requeues and cost
//
// Work is driven by events: the check, its Machines (updates that cannot change a verdict are
// dropped; a change of another of their conditions wakes only the checks with a rule on its type)
// and their Nodes (condition changes only; found from the Node's machine annotations or the
// Machine node-name index of package index). The one timed requeue is the moment the first
// pending timeout of a target expires (a condition rule, the startup timeout, a retry period);
// there is no polling tick. Three short retries exist:
// write.ConflictRetry after a Machine changed since it was judged (the change behind it may be one
// the Machine watch drops), templateRetry while a remediation template cannot be used, and
// consistency.Recheck while the cache does not show the check's earlier writes (its verdicts and
// status: a pass never counts remediations in flight from a copy older than its own verdicts). A pass
// lists the selected Machines from the cache and reads each one's Node,
// without deep copies, then judges them in pure code (evaluate, table-tested and benchmarked over
// 5000 Machines); only Machines whose condition changes or that are remediated cost an API call,
// at most machineWriters at once.
//
// # Metrics
//
// Each evaluation sets the check's gauges (targets, unhealthy, suspect, short-circuited, retries
// exhausted; metrics.go), removed with the check; remediations started are counted when the
// verdict asking the owner, or the request, is written, refusals when a Machine's HealthCheckSucceeded takes a refusing reason.
//
// Start reading at Reconcile in controller.go; evaluate.go, health.go, limits.go and retry.go hold
// the decisions, status.go what is written, remediate.go and external.go the writes.
package machinehealthcheck
