package uptodate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// BenchmarkDecide is the cost of deciding one Machine of a deployment's current set: in full (the
// machine controller, once per Machine reconcile) and as a deployment does it for each of its
// Machines on every reconcile (Decider.Replacement).
func BenchmarkDecide(b *testing.B) {
	class := machineClass("pool", `{"image":"v1","instanceType":"small","disk":{"size":10,"type":"ssd"}}`)
	spec := v1beta1.MachineSpec{ProviderSpec: classRef("pool"), Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"role": "web"}}}
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"pool": "web"}}, Spec: spec}
	m.Status.MachineClass = RecordClass(class)
	m.Status.ProvisionedTime = ptr.To(metav1.NewTime(t0))
	d := ForDeployment(&v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1beta1.MachineDeploymentSpec{
		Template: v1beta1.MachineTemplateSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "web"}}, Spec: spec},
		Rollout:  &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr.To[int32](3600)},
	}})
	ApplyInPlace(setTemplate(d, m), m) // as its set made it
	b.Run("Decide", func(b *testing.B) {
		for b.Loop() {
			Decide(m, class, d, t0)
		}
	})
	b.Run("Decider.Replacement", func(b *testing.B) {
		x := NewDecider(d, class)
		for b.Loop() {
			x.Replacement(m, t0)
		}
	})
}

// BenchmarkApplyInPlace is the cost of checking one Machine that is already in line with its
// set's template, which a MachineSet pays for each of its Machines on every reconcile.
func BenchmarkApplyInPlace(b *testing.B) {
	spec := v1beta1.MachineSpec{ProviderSpec: classRef("pool"), Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"role": "web"}},
		LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{{Name: "hold", Owner: "test"}}}}
	t := &v1beta1.MachineTemplateSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "web"}}, Spec: spec}
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"pool": "web"}}, Spec: *spec.DeepCopy()}
	ApplyInPlace(t, m) // as its set made it
	for b.Loop() {
		after := *m
		if ApplyInPlace(t, &after) {
			b.Fatal("a Machine in line with its template changed")
		}
	}
}
