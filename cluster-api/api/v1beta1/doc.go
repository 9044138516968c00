// Package v1beta1 holds the cluster.machineapi.dev/v1beta1 API: the Cluster, built on the
// machine.machineapi.dev types. Machines, MachineSets and MachineDeployments join a Cluster through
// the ClusterNameLabel; machine-api never depends on this package.
//
// This package imports only the standard library, k8s.io/api, k8s.io/apimachinery and
// machine-api's api package, so that any client can use the types without pulling in a controller
// framework. Their server-side apply configurations, which need k8s.io/client-go, are generated
// into cluster-api/applyconfiguration (this package's kubebuilder:ac markers).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../../applyconfiguration
// +groupName=cluster.machineapi.dev
package v1beta1
