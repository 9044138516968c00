// Package sim is the simulated provider: a real Provider for local runs, tests and benchmarks that
// needs no cloud. Its instances are records in a store (in memory, or one JSON file per instance
// under Options.StateDir so they survive a manager restart), and it plays the kubelet for the Nodes
// of its instances.
//
// What it does:
//
//   - Create records an instance keyed by the Machine's UID (so calling it again finds the same
//     instance), with providerID sim:///<machine-uid>, an InternalIP from 10.128.0.0/9 and a
//     hostname, and registers the instance's Node — already Ready, with capacity from the
//     MachineClass's nodeTemplate or the instance type — once the boot delay has passed. With no
//     boot delay the Node is created within Create.
//   - Exists and Delete look the instance up by the Machine's UID; deleting a missing instance
//     succeeds. Deleting a linked Machine's Node is left to the machine controller; the Node of an
//     instance deleted before its Machine was linked to it goes with the instance, as a cloud's
//     node lifecycle controller would remove it.
//   - With a state folder, two managers (a leader and its standby) may share it: each reads the
//     folder again when it changed, so a standby that becomes leader knows every instance.
//   - The kubelet part (SetupWithManager) renews each Node's Lease every Options.HeartbeatInterval
//     (10s, as a kubelet does, so kube-controller-manager's node lifecycle controller keeps it
//     Ready) and its Ready condition's heartbeat every 5 minutes, starts pods bound to its Nodes
//     (by the scheduler or by spec.nodeName: Running, Ready, containers ready) and finishes pods
//     that are terminating (the eviction or deletion the drain started), recording each one.
//     Without kube-controller-manager it also keeps the not-ready/unreachable NoSchedule taints
//     (unless Options.LeaveConditionTaints). A Node whose
//     instance is gone, or that a fault knob made NotReady, is no longer served: its Ready condition
//     turns Unknown or False and its terminating pods stay, as on a real unreachable node.
//   - In-place updates (provider.InPlaceUpdater, inplace.go): CanUpdateInPlace compares the
//     desired providerSpec with what the instance has now. A new instanceType is applied in place
//     and is disruptive: UpdateInPlace records the type and its capacity, counts the update in
//     Instance.InPlaceUpdates and reboots the instance for Options.RebootDuration (flag
//     --sim-reboot-duration, 3s; the reboot-duration annotation per Machine), answering
//     provider.RequeueAfter until the reboot is over; a call during the reboot starts nothing new
//     (a change to yet another type waits for the reboot to end).
//     New tags are applied at once and are not disruptive. Nothing else is: the controller
//     replaces the Machine for any other change. The update is recorded in the store before
//     UpdateInPlace returns, so a restarted manager finds it done or under way and never counts it
//     twice.
//   - While an instance reboots its Node reports Ready=False (reason KubeletNotReady, a message
//     saying it reboots); afterwards Ready=True again, with capacity and allocatable (and the
//     instance-type label) of the new type, or of the MachineClass's nodeTemplate when it names a
//     capacity. UpdateInPlace writes the Node at once, as Create registers it; the kubelet
//     controller also requeues a rebooting Node for the end of its reboot (Nodes that do not
//     reboot get no extra passes).
//
// Fault knobs, as Machine annotations (see knobs.go) or Options: fail creates with an invalid
// configuration or transient errors, slow creates, a boot delay, a reboot duration, a Node that
// goes NotReady after a while, an instance that vanishes, a fixed InternalIP (to provoke
// duplicates), a spot reclaim announced ahead (provider.InterruptionNotifier, interruption.go)
// after which the instance vanishes.
//
// The providerSpec is {"instanceType": "small"|"medium"|"large", "tags": {"key": "value"}}
// (instanceType defaults to small, tags are optional); anything else is an invalid configuration.
// Code that builds Machines in Go writes it with ProviderSpec.Raw.
package sim
