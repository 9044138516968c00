// Command localstack is make run: it starts the local control plane (source-built etcd,
// kube-apiserver, kube-controller-manager with every default controller and kube-scheduler, on
// loopback, state in .local/), installs the CRDs, starts the managers it is
// given, applies the samples, shows the machines until they are Running, and stops everything on
// Ctrl-C.
package main
