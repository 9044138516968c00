// Package localstack runs the local control plane behind make run, the fault matrix and the
// benchmark: the source-built etcd and kube-apiserver from bin/k8s/<version>/, and, when
// configured, kube-controller-manager and kube-scheduler from the same build, listening on
// loopback only, with their state (etcd data, certificates, kubeconfigs, logs) under a directory
// that survives restarts, so a second make run resumes with the same objects.
//
// kube-controller-manager and kube-scheduler run as a real cluster's do: each with its own client
// certificate (users system:kube-controller-manager and system:kube-scheduler, whose permissions
// come from the API server's bootstrap RBAC policy), the controller manager with per-controller
// service-account credentials, signing service-account tokens with the key the API server verifies
// them with and signing CSRs with the local CA. The API server's ServiceAccount and
// TaintNodesByCondition admission plugins are on only when the controllers that complete their
// work (serviceaccount, nodelifecycle) run. The API server can be killed and started again with
// the same flags while everything else keeps running (the fault matrix does).
//
// With Config.NodeBootstrap the plane also takes real kubelets that join with bootstrap tokens
// (make run-vms and make test-vms, whose Machines are libvirt VMs): bootstrap-token
// authentication and the NodeRestriction admission plugin in kube-apiserver, the bootstrap-token
// controllers in kube-controller-manager, and ApplyNodeBootstrap for the RBAC of
// machine-api/config/bootstrap. Such guests reach the API server through a forward, at an address
// of their own: the serving certificate also names kubernetes and 127.0.0.1, the TLS server names
// they can check.
//
// Start checks its inputs before it starts anything (missing binaries, ports already taken) and
// returns errors that say what to do. Every process it starts (machineapi.dev/drain/testplane/process,
// which the test suites' testplane shares) runs in its own process group and is asked to die with
// its parent; Stop terminates them in reverse order and waits, so Ctrl-C leaves nothing running.
//
// Start reading at Start; pki.go makes the certificates and the kubeconfig.
package localstack
