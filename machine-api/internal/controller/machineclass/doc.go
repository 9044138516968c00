// Package machineclass keeps a MachineClass from being deleted while Machines refer to it: it
// puts the machine.machineapi.dev/machineclass finalizer on a class as soon as a Machine uses it and
// removes it once none does, so deleting an unused class is immediate and deleting a used one waits
// (with a Warning event naming the Machines) until they are gone or point elsewhere.
//
// Machines are found through the machine controller's spec.providerSpec.machineClass.name index;
// a Machine that moves to another class brings both classes back. There are no timed requeues but
// the consistency guard's (consistency.Recheck while the cache does not show the class's finalizer
// write yet): Machine events bring the class back. A paused class (see v1beta1.PausedBy) is left alone. The
// finalizer is written with a merge patch guarded by the resourceVersion read; a conflict is
// retried after write.ConflictRetry without an error.
//
// Tests: machineclass_test.go (envtest, the whole manager running).
package machineclass
