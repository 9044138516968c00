package uptodate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func hook(name, owner string) v1beta1.LifecycleHook {
	return v1beta1.LifecycleHook{Name: name, Owner: owner}
}

// TestInPlaceFieldsInStep keeps the list of in-place fields, the template hash, the copy from a
// deployment to its sets, the application to Machines and the API reference in step: a change of
// each listed field keeps the hash and reaches a set's template and a running Machine, and the
// MachineDeployment's template documentation names each.
func TestInPlaceFieldsInStep(t *testing.T) {
	change := map[string]func(*v1beta1.MachineTemplateSpec){
		"metadata.labels":      func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Labels = map[string]string{"tier": "gold"} },
		"metadata.annotations": func(t *v1beta1.MachineTemplateSpec) { t.Metadata.Annotations = map[string]string{"note": "x"} },
		"spec.metadata":        func(t *v1beta1.MachineTemplateSpec) { t.Spec.Metadata.Labels = map[string]string{"role": "db"} },
		"spec.taints": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.Taints = []v1beta1.MachineTaint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		},
		"spec.deletion": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.Deletion = &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](600)}
		},
		"spec.lifecycleHooks": func(t *v1beta1.MachineTemplateSpec) {
			t.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{hook("backup", "ops")}
		},
	}
	if len(change) != len(InPlaceFields) {
		t.Fatalf("InPlaceFields %v and this test's %d changes differ", InPlaceFields, len(change))
	}
	crd, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "machine.machineapi.dev_machinedeployments.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := func() *v1beta1.MachineTemplateSpec {
		return &v1beta1.MachineTemplateSpec{Spec: v1beta1.MachineSpec{
			ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)}},
		}}
	}
	for _, field := range InPlaceFields {
		t.Run(field, func(t *testing.T) {
			f, ok := change[field]
			if !ok {
				t.Fatalf("no change for in-place field %s", field)
			}
			tmpl := base()
			f(tmpl)
			if TemplateHash(tmpl) != TemplateHash(base()) {
				t.Errorf("a change of %s changes the template hash: it would roll out", field)
			}
			if strings.HasPrefix(field, "spec.") {
				set := base()
				CopyInPlace(&set.Spec, &tmpl.Spec)
				if !equality.Semantic.DeepEqual(set.Spec, tmpl.Spec) {
					t.Errorf("CopyInPlace does not copy %s: %+v", field, set.Spec)
				}
			}
			m := &v1beta1.Machine{Spec: base().Spec}
			if !ApplyInPlace(tmpl, m) {
				t.Errorf("ApplyInPlace does not apply %s to a running Machine", field)
			}
			if dec := Decide(m, nil, Desired{Template: tmpl, Deployment: true}, time.Now()); !dec.UpToDate() || len(dec.InPlace) > 0 {
				t.Errorf("after ApplyInPlace the Machine still differs: %+v", dec)
			}
			if !strings.Contains(string(crd), "- "+field) {
				t.Errorf("the API reference of MachineDeploymentSpec.template does not list %s", field)
			}
		})
	}
}

func TestApplyInPlace(t *testing.T) {
	deleting := metav1.NewTime(time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC))
	drain := func(s int32) *v1beta1.MachineDeletionSpec {
		return &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To(s)}
	}
	cases := map[string]struct {
		template    v1beta1.MachineSpec
		machine     *v1beta1.Machine
		wantChanged bool
		wantSpec    v1beta1.MachineSpec
		wantHooks   string // TemplateHooksAnnotation
	}{
		"a running Machine gets the template's deletion settings and hooks, and keeps a hook another component added": {
			template: v1beta1.MachineSpec{Deletion: drain(120), LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("backup", "ops")}}},
			machine: &v1beta1.Machine{Spec: v1beta1.MachineSpec{Deletion: drain(60),
				LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("remote-drain", "cluster-api")}}}},
			wantChanged: true,
			wantSpec: v1beta1.MachineSpec{Deletion: drain(120),
				LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("remote-drain", "cluster-api"), hook("backup", "ops")}}},
			wantHooks: `{"preDrain":["backup"]}`,
		},
		"a hook removed from the template goes; one another component added stays": {
			template: v1beta1.MachineSpec{},
			machine: &v1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHooksAnnotation: `{"preDrain":["backup"]}`}},
				Spec: v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{
					PreDrain: []v1beta1.LifecycleHook{hook("backup", "ops"), hook("remote-drain", "cluster-api")}}},
			},
			wantChanged: true,
			wantSpec:    v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("remote-drain", "cluster-api")}}},
		},
		"a Machine being deleted gets the new deletion settings and no hook": {
			template: v1beta1.MachineSpec{Deletion: drain(120), Taints: []v1beta1.MachineTaint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}},
				LifecycleHooks: v1beta1.LifecycleHooks{PreTerminate: []v1beta1.LifecycleHook{hook("snapshot", "ops")}}},
			machine:     &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1beta1.MachineSpec{Deletion: drain(60)}},
			wantChanged: true,
			wantSpec:    v1beta1.MachineSpec{Deletion: drain(120)},
		},
		"a Machine being deleted with the template's deletion settings is not changed": {
			template:    v1beta1.MachineSpec{Deletion: drain(60), LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("backup", "ops")}}},
			machine:     &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Spec: v1beta1.MachineSpec{Deletion: drain(60)}},
			wantChanged: false,
			wantSpec:    v1beta1.MachineSpec{Deletion: drain(60)},
		},
		"hooks in another order are not rewritten": {
			template: v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("a", "o"), hook("b", "o")}}},
			machine: &v1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHooksAnnotation: `{"preDrain":["a","b"]}`}},
				Spec:       v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("b", "o"), hook("a", "o")}}},
			},
			wantChanged: false,
			wantSpec:    v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{hook("b", "o"), hook("a", "o")}}},
			wantHooks:   `{"preDrain":["a","b"]}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := tc.machine.DeepCopy()
			before := tc.machine.DeepCopy()
			if changed := ApplyInPlace(&v1beta1.MachineTemplateSpec{Spec: tc.template}, m); changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !equality.Semantic.DeepEqual(m.Spec, tc.wantSpec) {
				t.Fatalf("spec\n%+v\nwant\n%+v", m.Spec, tc.wantSpec)
			}
			if got := m.Annotations[TemplateHooksAnnotation]; got != tc.wantHooks {
				t.Fatalf("hooks annotation %q, want %q", got, tc.wantHooks)
			}
			if !equality.Semantic.DeepEqual(tc.machine, before) {
				t.Fatalf("ApplyInPlace changed the maps or slices of the Machine it was given a copy of")
			}
		})
	}
}
