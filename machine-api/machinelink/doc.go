// Package machinelink connects machine-api's Machine to the nodelink module: the typed
// nodelink.Adapter for v1beta1.Machine, the options every linker of Machines shares
// (LinkerOptions), Setup, which adds machine-manager's linker for Nodes of its own cluster, and
// NewRemoteLinker, which builds a linker for the Nodes of another API server (cluster-manager runs
// one per workload cluster). There is one adapter, so every linker records a link the same way:
// status.nodeRef and the NodeLinked condition of a Machine (Record), by a server-side apply of
// those two fields. nodelink decides them, and owns the Node's machine.machineapi.dev/machine and
// cluster-namespace annotations, labels, annotations and taints taken from spec.metadata and
// spec.taints.
//
// Who writes the two fields on a Machine: a remote linker (cluster-manager), for the Machines it
// handles; for the Machines machine-manager's own linker handles, the machine controller, which
// Setup makes the linker's nodelink.LinkRecorder (Options.Recorder): it records each link in its
// own status write, so that the link to a Ready Node and Running are one write. Either way one
// writer per Machine.
package machinelink
