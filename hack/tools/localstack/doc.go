// Package localstack runs the local control plane behind make run: the source-built etcd and
// kube-apiserver from bin/k8s/<version>/, listening on loopback only, with their state (etcd
// data, certificates, kubeconfig, logs) under a directory that survives restarts, so a second
// make run resumes with the same objects.
//
// Start checks its inputs before it starts anything (missing binaries, ports already taken) and
// returns errors that say what to do. Every process it starts runs in its own process group and is
// asked to die with its parent; Stop terminates them in reverse order and waits, so Ctrl-C leaves
// nothing running.
//
// Start reading at Start; pki.go makes the certificates and the kubeconfig.
package localstack
