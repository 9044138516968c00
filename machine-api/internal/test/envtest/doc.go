// Package envtest starts the source-built kube-apiserver and etcd (bin/k8s/<version>, named by
// KUBEBUILDER_ASSETS) for this module's test suites, with the module's CRDs installed.
//
// A suite whose behaviour depends on the real controllers of a cluster asks StartWith for them
// (Options.Controllers, Options.Scheduler): kube-controller-manager and kube-scheduler from the
// same build run beside the API server (machineapi.dev/drain/testplane), so PodDisruptionBudget
// status, garbage collection and namespace deletion are their work, not the suite's. The machine
// controller's suite runs the disruption controller, the garbage collector and the namespace
// controller; no test writes PodDisruptionBudget status.
//
// It refuses to run without those binaries instead of skipping: a suite that silently ran zero
// specs would let make test pass without testing anything. make test sets KUBEBUILDER_ASSETS and
// builds the binaries first; running go test by hand needs
// `export KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.2` from the repository root after `make controlplane`.
package envtest
