// Package test holds what the drain module's tests share: a real API server from envtest (Start),
// with the real disruption controller of kube-controller-manager when a suite asks for it (so
// PodDisruptionBudget status is computed as in a cluster; no test writes it), fluent builders for
// the objects a drain meets (Node, Pod, PodDisruptionBudget, DaemonSet), and a stand-in for the
// kubelet (Kubelet) that finishes terminating pods, since envtest runs none.
//
// It is for tests only; nothing outside _test.go files imports it.
package test
