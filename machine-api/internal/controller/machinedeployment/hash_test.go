package machinedeployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

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
	h := templateHash(base())
	if len(h) != 10 {
		t.Fatalf("hash %q is not 10 characters", h)
	}
	same := map[string]func(*v1beta1.MachineTemplateSpec){
		"template labels":     func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Labels["x"] = "y" },
		"template annotation": func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Annotations = map[string]string{"x": "y"} },
		"node labels":         func(t *v1beta1.MachineTemplateSpec) { t.Spec.Metadata.Labels = map[string]string{"role": "db"} },
		"node annotations":    func(t *v1beta1.MachineTemplateSpec) { t.Spec.Metadata.Annotations = map[string]string{"x": "y"} },
		"taints": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		},
		"providerSpec key order and spacing": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.ProviderSpec.Value.Raw = []byte(`{ "zone": "a", "instanceType": "small" }`)
		},
	}
	for name, change := range same {
		t.Run("in place: "+name, func(t *testing.T) {
			tmpl := base()
			change(tmpl)
			if got := templateHash(tmpl); got != h {
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
		"lifecycle hooks": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: "h", Owner: "o"}}
		},
	}
	for name, change := range different {
		t.Run("rollout: "+name, func(t *testing.T) {
			tmpl := base()
			change(tmpl)
			if templateHash(tmpl) == h {
				t.Fatalf("a change of %s kept the hash: it would not roll out", name)
			}
		})
	}
}

func TestSetSelector(t *testing.T) {
	md := &v1beta1.MachineDeployment{Spec: v1beta1.MachineDeploymentSpec{Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}}
	sel := setSelector(md, "md-abc")
	if sel.MatchLabels[v1beta1.SetNameLabel] != "md-abc" || sel.MatchLabels["pool"] != "a" || md.Spec.Selector.MatchLabels[v1beta1.SetNameLabel] != "" {
		t.Fatalf("selector %+v (deployment's %+v)", sel, md.Spec.Selector)
	}
	full := map[string]string{}
	for i := range 16 {
		full[string(rune('a'+i))] = "x"
	}
	md.Spec.Selector.MatchLabels = full
	sel = setSelector(md, "md-abc")
	if len(sel.MatchLabels) != 16 || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Values[0] != "md-abc" {
		t.Fatalf("with 16 matchLabels the set-name goes to matchExpressions: %+v", sel)
	}
}
