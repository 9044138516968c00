// Package lineage is the protocol by which the MachineHealthCheck and MachineSet controllers count
// how often one slot of a set was remediated, so that a health check can stop remediating a slot
// whose Machines never become healthy (spec.remediation of a MachineHealthCheck).
//
// A lineage is the succession of Machines that fill one slot of a set because a health check
// deleted their predecessor. Everything about it is stored on the Machines themselves, so that
// neither controller keeps it in memory and a restart of either loses or duplicates nothing:
//
//   - Before deleting a Machine (only when its check has spec.remediation), the health check marks
//     it (Mark): the lineage annotation (the Machine's own name when it has none yet), the time of
//     this remediation, and the lineage finalizer. The count of earlier remediations the Machine
//     carries is left as it is.
//   - The MachineSet, when it creates Machines to fill the gap left by deleting ones, gives each
//     marked Machine's lineage to exactly one new Machine (Inherit: same lineage, count + 1, the
//     time of the remediation, and the name of the Machine it replaces), then removes the
//     finalizer (Release). A marked Machine it does not replace (the set was scaled down, is being
//     deleted, or does not create) is released too: its lineage ends there.
//   - The finalizer keeps the marked Machine, and so what it says, until the set has acted on it:
//     a set that reconciles only after the Machine's instance is gone still finds it. A set that
//     crashed between creating the heir and releasing the finalizer finds the heir by its
//     replaces annotation (Sort) and releases the finalizer without creating another one.
//   - The health check reads the count on each Machine (Of) and removes it (Reset) once the Machine
//     has been healthy for spec.remediation.minHealthyPeriodSeconds.
//
// Lineage state is never inferred from names, creation times or events: only from the
// annotations and the finalizer listed in api/v1beta1 (LineageAnnotation, LineageRetriesAnnotation,
// LineageRemediatedAtAnnotation, ReplacesAnnotation, LineageFinalizer). Invalid values written by
// hand read as absent.
package lineage
