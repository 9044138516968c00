package builder

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/sim"
)

// MachineBuilder builds a Machine.
type MachineBuilder struct{ m *v1beta1.Machine }

// Machine starts a Machine for the simulated provider (instance type small).
func Machine(namespace, name string) *MachineBuilder {
	b := &MachineBuilder{m: &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
	return b.WithInstanceType("small")
}

// WithInstanceType sets the sim providerSpec's instance type.
func (b *MachineBuilder) WithInstanceType(t string) *MachineBuilder {
	b.m.Spec.ProviderSpec = v1beta1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: t}.Raw()}
	return b
}

// WithMachineClass refers the providerSpec to a MachineClass.
func (b *MachineBuilder) WithMachineClass(name string) *MachineBuilder {
	b.m.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: name}}
	return b
}

// WithLabels sets the Machine's own labels.
func (b *MachineBuilder) WithLabels(l map[string]string) *MachineBuilder {
	b.m.Labels = l
	return b
}

// WithAnnotations sets the Machine's own annotations.
func (b *MachineBuilder) WithAnnotations(a map[string]string) *MachineBuilder {
	b.m.Annotations = a
	return b
}

// WithNodeLabels sets spec.metadata.labels (labels for the Node).
func (b *MachineBuilder) WithNodeLabels(l map[string]string) *MachineBuilder {
	b.m.Spec.Metadata.Labels = l
	return b
}

// WithTaints sets spec.taints.
func (b *MachineBuilder) WithTaints(t ...corev1.Taint) *MachineBuilder {
	b.m.Spec.Taints = machineTaints(t)
	return b
}

// WithPreDrainHook adds a pre-drain lifecycle hook.
func (b *MachineBuilder) WithPreDrainHook(name, owner string) *MachineBuilder {
	b.m.Spec.LifecycleHooks.PreDrain = append(b.m.Spec.LifecycleHooks.PreDrain, v1beta1.LifecycleHook{Name: name, Owner: owner})
	return b
}

// WithPreTerminateHook adds a pre-terminate lifecycle hook.
func (b *MachineBuilder) WithPreTerminateHook(name, owner string) *MachineBuilder {
	b.m.Spec.LifecycleHooks.PreTerminate = append(b.m.Spec.LifecycleHooks.PreTerminate, v1beta1.LifecycleHook{Name: name, Owner: owner})
	return b
}

// WithDeletion sets spec.deletion.
func (b *MachineBuilder) WithDeletion(d v1beta1.MachineDeletionSpec) *MachineBuilder {
	b.m.Spec.Deletion = &d
	return b
}

// Build returns the Machine.
func (b *MachineBuilder) Build() *v1beta1.Machine { return b.m.DeepCopy() }

// MachineClass returns a MachineClass for the simulated provider with the given instance type.
func MachineClass(namespace, name, instanceType string) *v1beta1.MachineClass {
	return &v1beta1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1beta1.MachineClassSpec{ProviderSpec: *sim.ProviderSpec{InstanceType: instanceType}.Raw()},
	}
}

// machineTaints returns ts as Machine taints kept in sync with the Node (propagation Always).
func machineTaints(ts []corev1.Taint) []v1beta1.MachineTaint {
	out := make([]v1beta1.MachineTaint, 0, len(ts))
	for _, t := range ts {
		out = append(out, v1beta1.MachineTaint{Key: t.Key, Value: t.Value, Effect: t.Effect, Propagation: v1beta1.TaintPropagationAlways})
	}
	return out
}
