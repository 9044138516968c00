// Package apivalidation holds the tests of the cluster.machineapi.dev/v1beta1 API: the CRD's
// names, and that the source-built kube-apiserver stores valid Clusters with their defaults and
// rejects bad ones with a message naming the field. It has no code of its own (the api package
// imports only the standard library, k8s.io/api, k8s.io/apimachinery and machine-api's api).
package apivalidation
