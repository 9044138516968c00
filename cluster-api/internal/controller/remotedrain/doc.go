// Package remotedrain is the remote drain controller: it drains, in the workload cluster, the
// Node of a deleting Machine whose Node lives there, which machine-manager cannot reach.
//
// # Which Machines
//
// Machines with the cluster-name label and remote-nodes=true (v1beta1.ClusterNameLabel,
// v1beta1.RemoteNodesLabel), not paused (machine.machineapi.dev/paused).
//
// # Hold
//
// Every such Machine that is not being deleted gets the preDrain lifecycle hook
// v1beta1.DrainHookName (owner v1beta1.DrainHookOwner), added by a merge patch of the hook list
// with the Machine's resourceVersion as precondition, so a hook another component added at the
// same time is never dropped (a conflict is requeued after write.ConflictRetry, without an error:
// the shared conflict policy of machineapi.dev/machine-api/reconcile/write). The machine
// controller's delete pipeline then waits in WaitingForPreDrainHooks. A Machine deleted before
// its hook was added is not held (machine-api refuses hooks on a deleting Machine): its Node is
// not drained, as before this controller existed. The hook is not put in the worker pools'
// MachineDeployment templates, so existing pools do not roll.
//
// # Drain
//
// For a deleting Machine that still has the hook, an ordered pipeline (steps.Pipeline of
// machineapi.dev/machine-api/reconcile/steps) that stops at the first step that releases or
// waits. What to do is the drain policy's decision (drain.DecideNode, asked
// through machinedrain as machine-manager asks it for the Nodes of its own cluster; decide.go):
//
//  1. other preDrain hooks remain → wait, without draining, until their owners remove them, as
//     machine-manager's delete pipeline waits before it drains (WorkloadNodeDrained=Unknown,
//     WaitingForPreDrainHooks; no timed requeue: a hook's removal is a Machine event);
//  2. nothing to drain → release at once (Normal event): the Machine has the
//     exclude-node-draining annotation, or no status.nodeRef, or its Cluster is being deleted or
//     gone (the whole workload cluster goes away, and waiting could hold Cluster deletion forever);
//  3. spec.deletion.nodeDrainTimeoutSeconds has passed since draining began → release (Warning
//     event), as machine-manager's DrainTimeout;
//  4. one bounded step of machineapi.dev/drain against the workload API server, with a clientset
//     built from the Cluster's kubeconfig Secret (package kubeconfig; clientsets are cached per
//     Cluster and kubeconfig fingerprint): done → release (Normal event "drained Node ..."); the
//     Node does not exist → release; not done, or the workload API server unreachable, or the
//     kubeconfig unusable → wait and poll every drainPoll (or sooner, at the drain deadline or
//     when a pod is to be deleted). The step applies the MachineDrainRules of the Machine's
//     namespace here in the management cluster (machinedrain.ReadRules; one that cannot be used
//     holds the drain, InvalidDrainRule) and drainDeadlineSeconds, as machine-manager does; pods
//     it deletes instead of evicting are named in a Warning PodsDeleted event.
//
// Releasing is removing the hook, with the same optimistic-locked patch as holding.
//
// # When draining began
//
// nodeDrainTimeoutSeconds counts from the start of draining, as for machine-manager, whose record
// of it (status.deletion.nodeDrainStartTime) this controller does not own. Its record is the
// WorkloadNodeDrained condition: Unknown while other hooks hold the drain, it turns False with the
// first drain step, so its lastTransitionTime is when draining began. It is in the Machine's
// status, written with the step's outcome (every outcome of a drain step, failures included, is
// False), so it survives a restart without another write or another field. Should that write
// fail, the next reconcile starts counting again.
//
// # Status
//
// The WorkloadNodeDrained condition, computed from what the pipeline observed (status.go, pure;
// set with conditions.Set at the reconcile's time) and written once per reconcile by a
// server-side apply of that one condition under the field manager FieldOwner (write.Status), only
// when it changed: Unknown while other hooks hold the drain, False with
// the drain's summary (or why it cannot drain) and how to let the Machine go, True with why the
// hook was removed. An event is emitted when the hook is removed, and while waiting only when the
// message changes (a drain's summary without its elapsed time), never once per poll.
//
// # Requeues
//
// Events drive the hold, the wait for other hooks of step 1 and the releases of step 2 (Machines,
// and their Clusters through the index.RemoteMachineByCluster field index of package
// internal/index). Waiting for a drain requeues after drainPoll, or at the drain deadline if
// sooner; a reconcile whose cache does not show the Machine's earlier writes yet (the hook, the
// condition) after consistency.Recheck (the consistency guard, package
// machineapi.dev/nodelink/consistency, wired by the manager). Time comes from an injected clock.
//
// Start reading at Reconcile in controller.go; decide.go holds the pure decisions, hook.go the
// patches, drain.go the drain step, status.go the condition and events; agree_test.go shows the
// local and remote drains deciding alike.
package remotedrain
