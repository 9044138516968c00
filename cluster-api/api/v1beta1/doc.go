// Package v1beta1 holds the cluster.machineapi.dev/v1beta1 API: the Cluster, built on the
// machine.machineapi.dev types. Machines, MachineSets and MachineDeployments join a Cluster through
// the ClusterNameLabel; machine-api never depends on this package.
//
// This package imports only the standard library, k8s.io/api, k8s.io/apimachinery and
// machine-api's api package.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.machineapi.dev
package v1beta1
