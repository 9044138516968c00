// Command localstack is make run: it starts the local control plane (source-built etcd,
// kube-apiserver, kube-controller-manager with every default controller and kube-scheduler, on
// loopback, state in .local/), installs the CRDs, starts the managers it is
// given, applies the samples, shows the machines until they are Running, and stops everything on
// Ctrl-C.
//
// make run-vms runs it too, with -node-bootstrap (real kubelets join with bootstrap tokens:
// localstack.Config.NodeBootstrap and the RBAC of machine-api/config/bootstrap), the libvirt
// manager, and -delete-applied-on-exit, with which Ctrl-C first deletes what was applied — the
// MachineDeployment of VMs, drained and deleted — and waits until it is gone.
package main
