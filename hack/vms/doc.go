// Package vms is the libvirt provider's end-to-end suite (make test-vms): the real
// machine-manager-libvirt binary on the local control plane of make run, started with the node
// bootstrap option (bootstrap tokens, NodeRestriction, the CSR and token controllers), making
// Machines that are real QEMU virtual machines of the node image, whose real kubelets join the
// cluster. Every packet stays on loopback: the VMs are on QEMU's user network with restrict=on,
// whose one forward leads to the API server on 127.0.0.1.
//
// The specs (docs/providers/libvirt.md, "make run-vms and make test-vms"), never more than two
// VMs alive at once:
//
//   - a MachineDeployment scaled 0 → 2: both Nodes Ready, linked by providerID, with the VMs' own
//     InternalIPs, and the Machines' labels (a node-role label among them) and taints on each
//     Node before any pod was bound to it — the Nodes register with the initialization taint,
//     which the node linker removes in the patch that applies them;
//   - a Deployment under a PodDisruptionBudget on those Nodes; scaling to 1 drains the Node that
//     goes with real pod termination, never fewer than the budget's minimum Ready, before its VM
//     stops;
//   - a VM destroyed behind the provider's back: its Node goes NotReady, a MachineHealthCheck has
//     it replaced, and the new VM joins;
//   - the template given a MachineClass of 2 GiB and 2 vCPUs under spec.rollout.inPlace Prefer:
//     the same Machine and Node, drained (its pods gone before the VM stops), cordoned once and
//     uncordoned, its VM restarted once (one new boot ID) with the new size, the Node Ready with
//     2 CPUs and about 2 GiB of capacity, the Machine Updating=False/InPlaceUpdated, no new
//     MachineSet, and the pods back on the Node;
//   - scaling to 0 leaves no domain, volume (but the image), Node or bootstrap token;
//   - bad input (an unreachable libvirt URI, a missing image volume, too little memory): the
//     Machine says what to change, and nothing is left behind.
//
// Layout: host.go reads and breaks the libvirt host directly (go-libvirt), manager.go builds and
// runs the manager binary, recorder.go watches Nodes and pods (bindings against Node versions,
// pod terminations, the workload's Ready count), monitor.go counts the VMs alive, objects.go holds
// the objects. The specs are the *_test.go files; suite_test.go starts everything. It needs root
// (the system libvirtd), providers/libvirt/hack/host-setup.sh done, and the node image imported
// (make test-vms does all three). Dev-only, never released.
package vms
