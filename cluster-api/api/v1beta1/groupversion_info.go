package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "cluster.machineapi.dev", Version: "v1beta1"}

// SchemeGroupVersion is GroupVersion under the name generated code refers to (the apply
// configurations in cluster-api/applyconfiguration).
var SchemeGroupVersion = GroupVersion

var (
	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &Cluster{}, &ClusterList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
