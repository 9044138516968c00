// Package process runs the child processes of test and development control planes: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, the managers under test. Package
// testplane starts kube-controller-manager and kube-scheduler beside envtest with it, and the local
// stack (hack/tools/localstack, behind make run, the fault matrix and the bench) its whole control
// plane.
//
// A process runs in its own process group and is killed if the process that started it dies, so a
// crashed suite or an interrupted make run leaves nothing behind; its output is appended to a log
// file. Stop sends SIGTERM to the group, then SIGKILL after a grace period, and waits. WaitHTTP
// polls a health endpoint until it answers 200, and gives up early, with the end of the log, when
// the process exits first.
//
// It imports only the standard library, so that dev-only modules import it without the drain
// module's dependencies.
package process
