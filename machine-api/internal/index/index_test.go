package index

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// controlledBy is the metadata of an object controlled by kind, whose UID is "uid-"+name.
func controlledBy(apiVersion, kind, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true),
	}}}
}

func TestIndexValues(t *testing.T) {
	gv := v1beta1.GroupVersion.String()
	tests := map[string]struct {
		f    client.IndexerFunc
		obj  client.Object
		want []string
	}{
		"a linked Machine by its Node": {machineNodeName,
			&v1beta1.Machine{Status: v1beta1.MachineStatus{NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: "n1"}}}, []string{"n1"}},
		"an unlinked Machine is not indexed by Node": {machineNodeName, &v1beta1.Machine{}, nil},
		"a Machine by its class": {machineClass,
			&v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "small"}}}}, []string{"small"}},
		"a Machine without a class is not indexed by class": {machineClass, &v1beta1.Machine{}, nil},
		"a Machine of a set by the set's UID":               {machineSet, &v1beta1.Machine{ObjectMeta: controlledBy(gv, "MachineSet", "s")}, []string{"uid-s"}},
		"an orphan Machine under NoController":              {machineSet, &v1beta1.Machine{}, []string{NoController}},
		"a Machine another kind controls is not indexed":    {machineSet, &v1beta1.Machine{ObjectMeta: controlledBy(gv, "Cluster", "c")}, nil},
		"a MachineSet of another group is not a set":        {machineSet, &v1beta1.Machine{ObjectMeta: controlledBy("other.dev/v1", "MachineSet", "s")}, nil},
		"a set of a deployment by the deployment's UID":     {setDeployment, &v1beta1.MachineSet{ObjectMeta: controlledBy(gv, "MachineDeployment", "d")}, []string{"uid-d"}},
		"a standalone set is not indexed":                   {setDeployment, &v1beta1.MachineSet{}, nil},
		"a set by its template's class": {setClass,
			&v1beta1.MachineSet{Spec: v1beta1.MachineSetSpec{Template: v1beta1.MachineTemplateSpec{Spec: withClass("big")}}}, []string{"big"}},
		"a set without a class is not indexed by class": {setClass, &v1beta1.MachineSet{}, nil},
		"a deployment by its template's class": {deploymentClass,
			&v1beta1.MachineDeployment{Spec: v1beta1.MachineDeploymentSpec{Template: v1beta1.MachineTemplateSpec{Spec: withClass("big")}}}, []string{"big"}},
		"a deployment without a class is not indexed by class": {deploymentClass, &v1beta1.MachineDeployment{}, nil},
		"a Machine being deleted":                              {machineDeleting, &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())}}, []string{Deleting}},
		"a live Machine is not indexed as deleting":            {machineDeleting, &v1beta1.Machine{}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.f(tc.obj); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func withClass(name string) v1beta1.MachineSpec {
	return v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: name}}}
}
