// Package v1beta1 holds the machine.machineapi.dev/v1beta1 API: Machine, MachineSet,
// MachineDeployment, MachineHealthCheck, MachineClass and MachineDrainRule, plus the well-known
// labels, annotations, condition types and reasons the controllers write.
//
// The kinds, plurals and field paths that the unmodified Kubernetes cluster-autoscaler reads (with
// CAPI_GROUP=machine.machineapi.dev) are a contract: machine-api/internal/apivalidation fails when one of
// them changes. Validation lives in the schema (kubebuilder markers and CEL rules whose messages
// name the offending field), so a bad object is rejected before anything is stored.
//
// This package imports only the standard library, k8s.io/api and k8s.io/apimachinery, so that
// any client can use the types without pulling in a controller framework. Their server-side apply
// configurations, which need k8s.io/client-go, are generated into machine-api/applyconfiguration
// (this package's kubebuilder:ac markers).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../../applyconfiguration
// +groupName=machine.machineapi.dev
package v1beta1
