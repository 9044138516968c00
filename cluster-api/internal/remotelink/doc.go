// Package remotelink runs one nodelink linker per Cluster whose Nodes live in a workload cluster
// (spec.kubeconfigSecretRef): it links that Cluster's Machines, in the management cluster, to the
// Nodes of the workload API server, through the nodelink module and machine-api's Machine
// adapter (machineapi.dev/machine-api/machinelink), the one machine-manager's own linker uses.
//
// # What it owns
//
// A Registry, added to the manager as a leader-elected runnable, holds the running linkers by
// Cluster. The cluster controller calls Ensure on every reconcile with the workload's client
// configuration and a fingerprint of the kubeconfig it came from: the first call starts a linker,
// a call with a new fingerprint (the Secret changed) stops the old linker and starts a new one,
// and Stop (the Cluster is deleted or no longer has a kubeconfig) stops it. All linkers stop with
// the manager. A linker that exits on its own (its Node cache could not sync, typically because the
// workload API server was down when it started) is started again by the next Ensure, no sooner
// than Options.RestartDelay after it exited.
//
// Each linker is machinelink.NewRemoteLinker (nodelink.NewRemoteLinker with that adapter), which
// owns its Node cache and needs no answer from the workload API server to be built: a Cluster
// whose workload cluster is down still gets a linker, which reports the outage and links once the
// server answers.
//
// # Invariants
//
//   - A linker links only the Machines in its Cluster's namespace that carry the Cluster's
//     cluster-name label and remote-nodes=true, so no two linkers (nor a machine-manager's
//     in-process linker that excludes remote-nodes) write the same Machine's NodeLinked condition.
//   - Nothing is deleted or unlinked while a workload API server is unreachable: nodelink keeps
//     its last Node state and reports reachability, which the registry hands to the controller
//     (Status) and signals through the notify callback, so the Cluster's WorkloadAPIReachable
//     condition follows it.
//
// Start reading at Registry.Ensure in registry.go.
package remotelink
