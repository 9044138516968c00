// Package machinelink connects machine-api's Machine to the nodelink module: a typed
// nodelink.Adapter for v1beta1.Machine and Setup, which starts a linker for the manager's Machines.
//
// nodelink owns status.nodeRef and the NodeLinked condition of a Machine, and the Node's
// machine.machineapi.dev/machine and cluster-namespace annotations, labels, annotations and taints
// taken from spec.metadata and spec.taints. The machine controller reads what nodelink recorded
// and never writes those fields.
package machinelink
