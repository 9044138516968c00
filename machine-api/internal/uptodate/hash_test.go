package uptodate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestTemplateHash(t *testing.T) {
	base := func() *v1beta1.MachineTemplateSpec {
		return &v1beta1.MachineTemplateSpec{
			Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "a"}},
			Spec: v1beta1.MachineSpec{
				ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"instanceType":"small","zone":"a"}`)}},
				Metadata:     v1beta1.ObjectMeta{Labels: map[string]string{"role": "web"}},
			},
		}
	}
	h := TemplateHash(base())
	// The hash before deletion settings and hooks became in-place fields: a template without them
	// hashes as it did, so existing MachineSets keep their names.
	if h != "fd7dw747vd" {
		t.Fatalf("hash %q, want fd7dw747vd as before: existing deployments would create a new MachineSet", h)
	}
	same := map[string]func(*v1beta1.MachineTemplateSpec){
		"template labels":     func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Labels["x"] = "y" },
		"template annotation": func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Annotations = map[string]string{"x": "y"} },
		"node labels":         func(t *v1beta1.MachineTemplateSpec) { t.Spec.Metadata.Labels = map[string]string{"role": "db"} },
		"node annotations":    func(t *v1beta1.MachineTemplateSpec) { t.Spec.Metadata.Annotations = map[string]string{"x": "y"} },
		"taints": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.Taints = []v1beta1.MachineTaint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		},
		"lifecycle hooks": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: "h", Owner: "o"}}
		},
		"deletion settings": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.Deletion = &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](600)}
		},
		"providerSpec key order and spacing": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.ProviderSpec.Value.Raw = []byte(`{ "zone": "a", "instanceType": "small" }`)
		},
	}
	for name, change := range same {
		t.Run("in place: "+name, func(t *testing.T) {
			tmpl := base()
			change(tmpl)
			if got := TemplateHash(tmpl); got != h {
				t.Fatalf("a change of %s changed the hash (%s -> %s): it would roll out", name, h, got)
			}
		})
	}
	different := map[string]func(*v1beta1.MachineTemplateSpec){
		"providerSpec value": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.ProviderSpec.Value.Raw = []byte(`{"instanceType":"large","zone":"a"}`)
		},
		"machineClass": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "c"}}
		},
		"versions": func(t *v1beta1.MachineTemplateSpec) { t.Spec.Versions = &v1beta1.MachineVersions{Kubelet: "v1.37.3"} },
	}
	for name, change := range different {
		t.Run("rollout: "+name, func(t *testing.T) {
			tmpl := base()
			change(tmpl)
			if TemplateHash(tmpl) == h {
				t.Fatalf("a change of %s kept the hash: it would not roll out", name)
			}
		})
	}
}
