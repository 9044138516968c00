// Package v1beta1 holds the libvirt provider's configuration — what a Machine's (or a
// MachineClass's) spec.providerSpec.value says — and what the provider reports in a Machine's
// status.providerStatus. It imports nothing but the standard library, k8s.io/api and
// k8s.io/apimachinery, so that a client can build and check a providerSpec without the provider.
//
// Start at ProviderSpec; Default fills in the defaults and Validate says what to change.
package v1beta1
