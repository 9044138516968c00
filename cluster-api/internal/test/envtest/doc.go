// Package envtest starts real kube-apiservers and etcds for cluster-api's tests, from the
// binaries `make controlplane` builds (found through KUBEBUILDER_ASSETS): a management cluster
// with both cluster-api's and machine-api's CRDs installed, and bare workload clusters that only
// hold Nodes. A suite fails — it does not skip — when the binaries are missing.
package envtest
