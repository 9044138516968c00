// Package testplane runs the real kube-controller-manager and kube-scheduler next to a test API
// server (controller-runtime's envtest, or any kube-apiserver), so that test suites whose behaviour
// depends on them get the real controllers' work rather than the suite's idea of it:
// PodDisruptionBudget status (the disruption controller), garbage collection of owned objects,
// namespace deletion, ReplicaSets and Deployments making pods, and pods bound to Nodes by the
// scheduler.
//
// It is test support, imported only by test code. StartEnvironment is the shared test environment
// of this repository's modules: it checks the source-built binaries ($KUBEBUILDER_ASSETS, failing
// with the command that builds a missing one rather than letting a suite skip), starts
// controller-runtime's envtest with the caller's CRDs, and, when EnvironmentOptions ask for them,
// kube-controller-manager and kube-scheduler as administrators of that API server. The envtest
// packages of drain, machine-api and cluster-api build theirs on it; Start runs the two
// components beside any API server given an admin kubeconfig. It lives in the drain
// module because drain is the module every suite that needs it already depends on and the one
// whose behaviour depends most on a controller it does not run (the disruption controller decides
// what the Eviction API admits). Besides the standard library it imports only client-go and
// controller-runtime's envtest, which the drain module's own tests already need.
//
// # Choosing controllers
//
// Options.Controllers is kube-controller-manager's --controllers. Suites name what they need
// (DisruptionControllers, GarbageCollectorControllers, or "*" for all on-by-default controllers):
// a controller a suite does not expect changes what it observes. The node lifecycle controller in
// particular marks every Node whose kubelet renews no Lease unreachable after 50 seconds and then
// evicts its pods, and the garbage collector deletes pods whose owner reference names an object
// that does not exist.
//
// # Lifecycle
//
// Start writes nothing but the kubeconfig it is given and the components' logs and serving
// certificates under Options.Dir, waits until each component answers its /healthz, and returns an
// error naming the command that builds a missing binary. Stop terminates both and waits. The
// components run as process.Process (package process, shared with the local stack of make run):
// each in its own process group, killed if the test binary dies.
package testplane
