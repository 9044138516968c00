// Package envtest starts the source-built kube-apiserver and etcd (bin/k8s/<version>, named by
// KUBEBUILDER_ASSETS) for this module's test suites, with the module's CRDs installed.
//
// It refuses to run without those binaries instead of skipping: a suite that silently ran zero
// specs would let make test pass without testing anything. make test sets KUBEBUILDER_ASSETS and
// builds the binaries first; running go test by hand needs
// `export KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.2` from the repository root after `make controlplane`.
package envtest
