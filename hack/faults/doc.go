// Package faults is the fault-matrix suite (make test-faults): the real machine-manager and
// cluster-manager binaries, with the simulated provider, on the source-built etcd and
// kube-apiserver, put through the failures the Machine API must survive. docs/reliability.md
// lists the scenarios, what is guaranteed and the known limits.
//
// # Invariants
//
// After every scenario (AfterEach), first with the scenario's Machines in place, then again once
// the suite has deleted them all:
//
//   - instances == Machines: every Machine with a providerID has its instance, every instance
//     (a file in --sim-state-dir) has its Machine, no Machine UID ever got a second instance
//     (InstanceHistory samples the folder several times a second), no sim Node outlives its
//     instance (CheckInstances);
//   - every deleted Machine was drained: probe pods bound to a Node that is gone must have been
//     evicted and finished, unless the Machine was excluded from draining, hit its drain timeout,
//     was unreachable (evicted, never finished), or the scenario deleted the Node itself
//     (CheckDrain);
//   - no remediation beyond the limits: no more health-check deletions than the scenario allows,
//     none while the check said RemediationAllowed=False (CheckRemediations);
//   - replicas converge: sets and deployments have exactly spec.replicas Machines, Ready, and
//     their status says so (CheckConverged);
//   - no Machine was linked to a second Node (CheckLinks);
//   - no pod of any namespace was bound to a Node of the scenario's Machines before its
//     initialization, if it registered with node.machineapi.dev/uninitialized: the binding's
//     resourceVersion is below that of the Node's first version without the taint
//     (CheckInitialization, from the tracker's Node and pod watches);
//   - no panic in any manager log, no manager exited on its own, and the manager's goroutine
//     count is back near where it started once its Machines are gone.
//
// # Layout
//
// plane.go starts the control plane and restarts its API server; component.go runs a manager
// binary (kill, restart, metrics); autoscaler.go runs the real cluster-autoscaler and reads its
// status (the scenarios labelled autoscaler, make test-autoscaler, which make test-faults leaves
// out); simstate.go reads the simulated cloud; tracker.go watches
// Machines, events and health checks, bindings.go Nodes and pod bindings, through patient.go's
// transport, which waits out an API server restart; invariants.go holds the
// checks; objects.go the objects.
// The scenarios are the *_test.go files, one per row of the matrix; harness_test.go sets up
// each scenario and runs the invariants.
package faults
