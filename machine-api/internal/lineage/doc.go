// Package lineage is the bookkeeping of remediation by a Machine's owner: how the
// MachineHealthCheck (the judge) tells a MachineSet (the owner) that a Machine must be replaced,
// and how the set counts how often one of its slots was remediated, so that a health check can
// stop remediating a slot whose Machines never become healthy (spec.remediation of a
// MachineHealthCheck).
//
// A lineage is the succession of Machines that fill one slot of a set because a health check
// judged their predecessor unhealthy. Everything about it is stored on the Machines, written once
// each, so that neither controller keeps it in memory and a restart of either loses or duplicates
// nothing:
//
//   - The health check writes its verdict on the Machine, in its status: HealthCheckSucceeded
//     False and OwnerRemediated False (Requested reads it). The reason of OwnerRemediated says
//     whether the lineage goes on (v1beta1.RemediationRequestedReason) or starts over
//     (v1beta1.RemediationRequestedLineageResetReason: the Machine had been healthy long enough,
//     or the check counts nothing).
//   - The set counts a requested Machine as gone, so it creates a Machine in its place, giving it
//     the lineage (Inherit: same lineage, count + 1, the time of the request, and the name of the
//     Machine it replaces) in the create itself; then it deletes the requested Machine. A set that
//     crashed between the two finds the replacement by its replaces annotation (Sort) and only
//     deletes. A requested Machine the set does not replace (it was scaled down meanwhile, is
//     Frozen, holds its creates) is deleted all the same: its lineage ends there.
//   - The health check reads the count on each Machine (Of) when it judges it, and decides from
//     the Machine's own conditions whether its failure continues the lineage (Healthy).
//
// No finalizer and no annotation is written by the health check: one remediation is two writes,
// the verdict and the delete (plus the replacement's create, which the set would make anyway).
//
// Lineage state is never inferred from names, creation times or events: only from the
// annotations listed in api/v1beta1 (LineageAnnotation, LineageRetriesAnnotation,
// LineageRemediatedAtAnnotation, ReplacesAnnotation) and the OwnerRemediated condition. Invalid
// values written by hand read as absent.
package lineage
