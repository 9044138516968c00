package index

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Field index names.
const (
	// MachineByNodeName indexes Machines by status.nodeRef.name: the Machine of a Node.
	MachineByNodeName = "machine.status.nodeRef.name"
	// MachineByClass indexes Machines by spec.providerSpec.machineClass.name: the users of a
	// MachineClass (within its namespace).
	MachineByClass = "machine.spec.providerSpec.machineClass.name"
	// MachineBySet indexes Machines by the UID of the MachineSet controlling them, and Machines
	// that no object controls under NoController (the candidates for adoption). Machines that
	// another kind controls are not indexed.
	MachineBySet = "machine.controller.machineSetUID"
	// MachineSetByDeployment indexes MachineSets by the UID of the MachineDeployment controlling
	// them.
	MachineSetByDeployment = "machineset.controller.machineDeploymentUID"
	// MachineSetByClass indexes MachineSets by spec.template.spec.providerSpec.machineClass.name:
	// the sets whose Machines use a MachineClass (within its namespace).
	MachineSetByClass = "machineset.spec.template.spec.providerSpec.machineClass.name"
	// MachineDeploymentByClass indexes MachineDeployments by
	// spec.template.spec.providerSpec.machineClass.name.
	MachineDeploymentByClass = "machinedeployment.spec.template.spec.providerSpec.machineClass.name"
	// MachineDeleting indexes the Machines that are being deleted (metadata.deletionTimestamp
	// set) under Deleting; others are not indexed. With a namespace, the Machines whose drain a
	// MachineDrainRule of that namespace may change.
	MachineDeleting = "machine.metadata.deleting"
)

// Deleting is the MachineDeleting value of Machines that are being deleted.
const Deleting = "true"

// NoController is the MachineBySet value of Machines that no object controls.
const NoController = "<none>"

// Register registers every index of this package with indexer (a manager's field indexer).
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj  client.Object
		name string
		what string
		f    client.IndexerFunc
	}{
		{&v1beta1.Machine{}, MachineByNodeName, "Machines by Node name", machineNodeName},
		{&v1beta1.Machine{}, MachineByClass, "Machines by MachineClass", machineClass},
		{&v1beta1.Machine{}, MachineBySet, "Machines by controlling MachineSet", machineSet},
		{&v1beta1.MachineSet{}, MachineSetByDeployment, "MachineSets by controlling MachineDeployment", setDeployment},
		{&v1beta1.MachineSet{}, MachineSetByClass, "MachineSets by MachineClass", setClass},
		{&v1beta1.MachineDeployment{}, MachineDeploymentByClass, "MachineDeployments by MachineClass", deploymentClass},
		{&v1beta1.Machine{}, MachineDeleting, "Machines being deleted", machineDeleting},
	}
	for _, ix := range indexes {
		if err := indexer.IndexField(ctx, ix.obj, ix.name, ix.f); err != nil {
			return fmt.Errorf("indexing %s: %w", ix.what, err)
		}
	}
	return nil
}

func machineNodeName(o client.Object) []string {
	if ref := o.(*v1beta1.Machine).Status.NodeRef; ref != nil {
		return []string{ref.Name}
	}
	return nil
}

func machineDeleting(o client.Object) []string {
	if o.GetDeletionTimestamp() != nil {
		return []string{Deleting}
	}
	return nil
}

func machineClass(o client.Object) []string {
	return classOf(o.(*v1beta1.Machine).Spec)
}

func setClass(o client.Object) []string {
	return classOf(o.(*v1beta1.MachineSet).Spec.Template.Spec)
}

func deploymentClass(o client.Object) []string {
	return classOf(o.(*v1beta1.MachineDeployment).Spec.Template.Spec)
}

func classOf(spec v1beta1.MachineSpec) []string {
	if c := spec.ProviderSpec.MachineClass; c != nil {
		return []string{c.Name}
	}
	return nil
}

func machineSet(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	switch {
	case ref == nil:
		return []string{NoController}
	case ref.Kind == "MachineSet" && ref.APIVersion == v1beta1.GroupVersion.String():
		return []string{string(ref.UID)}
	}
	return nil
}

func setDeployment(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "MachineDeployment" && ref.APIVersion == v1beta1.GroupVersion.String() {
		return []string{string(ref.UID)}
	}
	return nil
}
