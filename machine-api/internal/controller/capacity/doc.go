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
// The controller records what it wrote, key and value, in v1beta1.CapacityAnnotationsAnnotation
// (a JSON object). A capacity annotation is the controller's when it is absent or still has the
// recorded value: then it is written, updated when the class changes, or removed. One whose value
// differs from the record (or that was there before any record) was set by someone else and is
// never overwritten or removed; it leaves the record, so it stays the user's until they delete it.
//
// # Writes and requeues
//
// One merge patch of the annotations per change, guarded by the resourceVersion it was computed
// from: a conflict (a user or another controller wrote the object meanwhile) is retried after
// write.ConflictRetry without an error (see package write). A Normal event on the object says
// what was set and which keys were left alone. Events drive the work: the object's creation,
// changes of its spec or annotations, and changes of MachineClasses, mapped to their users
// through index.MachineSetByClass and index.MachineDeploymentByClass. Paused objects (see
// v1beta1.PausedBy) are left alone.
//
// Start reading at Reconcile in controller.go.
package capacity
