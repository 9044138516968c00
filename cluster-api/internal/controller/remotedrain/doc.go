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
// same time is never dropped (a conflict is retried on the newer Machine's event). The machine
// controller's delete pipeline then waits in WaitingForPreDrainHooks. A Machine deleted before
// its hook was added is not held (machine-api refuses hooks on a deleting Machine): its Node is
// not drained, as before this controller existed. The hook is not put in the worker pools'
// MachineDeployment templates, so existing pools do not roll.
//
// # Drain
//
// For a deleting Machine that still has the hook, an ordered pipeline that stops at the first
// step that releases or waits:
//
//  1. nothing to drain → release at once (Normal event): the Machine has the
//     exclude-node-draining annotation, or no status.nodeRef, or its Cluster is being deleted or
//     gone (the whole workload cluster goes away, and waiting could hold Cluster deletion forever);
//  2. spec.deletion.nodeDrainTimeoutSeconds has passed since the Machine's deletionTimestamp →
//     release (Warning event), as machine-manager's DrainTimeout;
//  3. one bounded step of machineapi.dev/drain against the workload API server, with a clientset
//     built from the Cluster's kubeconfig Secret (package kubeconfig; clientsets are cached per
//     Cluster and kubeconfig fingerprint): done → release (Normal event "drained Node ..."); the
//     Node does not exist → release; not done, or the workload API server unreachable, or the
//     kubeconfig unusable → wait and poll every drainPoll (or sooner, at the drain deadline).
//
// Releasing is removing the hook, with the same optimistic-locked patch as holding.
//
// # Status
//
// The WorkloadNodeDrained condition, computed from what the pipeline observed (status.go, pure)
// and written once per reconcile by a server-side apply of that one condition under the field
// manager FieldOwner, only when it changed: False with the drain's summary (or why it cannot
// drain) and how to let the Machine go, True with why the hook was removed. An event is emitted
// when the hook is removed, and while waiting only when the message changes (a drain's summary
// without its elapsed time), never once per poll.
//
// # Requeues
//
// Events drive the hold and the releases of step 1 (Machines, and their Clusters through the
// IndexRemoteCluster field index). Waiting for a drain requeues after drainPoll, or at the drain
// deadline if sooner. Time comes from an injected clock.
//
// Start reading at Reconcile in controller.go; decide.go holds the pure decisions, hook.go the
// patches, drain.go the drain step, status.go the condition and events.
package remotedrain
