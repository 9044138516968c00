// Package capacity writes the cluster-autoscaler's capacity annotations
// (capacity.cluster-autoscaler.kubernetes.io/*, see v1beta1.CapacityCPUAnnotation and the keys
// beside it) on every MachineSet and MachineDeployment whose template refers to a MachineClass
// with a spec.nodeTemplate, so that the unmodified autoscaler can scale the group up from zero:
// it reads those annotations, never the class.
//
// # What is written
//
// From the nodeTemplate (annotations.go, pure functions): capacity cpu, memory,
// ephemeral-storage (ephemeral-disk) and pods (maxPods); the first resource named */gpu as
// gpu-type and gpu-count; labels as "k=v,k2=v2" and taints as "k=v:Effect,k2:Effect", sorted.
// Other resources have no annotation and are not written. A set or deployment without a class, or
// whose class has no nodeTemplate (or is missing), gets none, and the ones written earlier are
// removed.
//
// # Whose annotation it is
//
// The API server's: the controller writes with server-side apply under its own field manager,
// FieldOwner, an apply configuration holding exactly the capacity annotations the class gives
// (annotations.go), and the object's managedFields record, key by key, which of them it owns. It
// never forces. An annotation another manager set by hand (kubectl annotate, an edit, a merge
// patch) with another value makes the apply fail with a conflict naming it (a StatusCause of type
// FieldManagerConflict, field ".metadata.annotations.<key>"): the controller applies again without
// it, so the user's value stays, and its event says so ("left alone: <key>=<value> (set by
// "<manager>")"). An annotation the controller applied and no longer applies (the class lost the
// value, or the template the class) is removed by the API server, the controller being its only
// owner; one set by hand stays. Deleting an annotation set by hand hands it back: nobody owns it,
// so the next apply that wants it writes it.
//
// Versions before server-side apply recorded what they wrote, as JSON, in the annotation
// machine.machineapi.dev/capacity-annotations, and wrote with merge patches (whose manager the API
// server counts as the owner). An object still carrying that record is migrated once, before its
// first apply (migrate.go): the annotations the record names, still with the recorded value, are
// the controller's, as they were for the versions that wrote it, and one merge patch removes the
// record and rewrites the managed fields so that FieldOwner's apply alone owns those (the managed
// fields are read from the API server: the manager's cache strips them). The others stay with
// whoever set them.
//
// # Writes and requeues
//
// Nothing is sent when the object (as cached) carries exactly the annotations wanted. Otherwise
// one apply, plus one per conflict (a user's annotation the class would set to another value), at
// most one of which changes the object; an apply that changes nothing writes nothing (the
// resourceVersion stays). The applies carry the object's UID as their only precondition (no
// resourceVersion: they compute nothing from the object), so they need no retry; the migration's
// patch is guarded by the resourceVersion read, and a conflict there is retried after
// write.ConflictRetry without an error (see package write). A Normal event on the object says
// what was set or removed and which keys were left alone; a reconcile that changes nothing only
// logs at V(1). Events drive the work: the object's creation, changes of its spec or annotations,
// and changes of MachineClasses, mapped to their users through index.MachineSetByClass and
// index.MachineDeploymentByClass; a reconcile whose cache does not show the object's earlier
// writes yet is requeued after consistency.Recheck (the consistency guard, wired by the manager).
// Paused objects (see v1beta1.PausedBy) are left alone.
//
// Start reading at Reconcile in controller.go.
package capacity
