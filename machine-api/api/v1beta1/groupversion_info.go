package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "machine.machineapi.dev", Version: "v1beta1"}

// SchemeGroupVersion is GroupVersion under the name generated code refers to (the apply
// configurations in machine-api/applyconfiguration).
var SchemeGroupVersion = GroupVersion

var (
	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

var knownTypes []runtime.Object

// register records a kind and its list for addKnownTypes; each *_types.go file calls it from init.
func register(objs ...runtime.Object) {
	knownTypes = append(knownTypes, objs...)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
