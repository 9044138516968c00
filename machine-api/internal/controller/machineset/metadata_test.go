package machineset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestApplyTemplate(t *testing.T) {
	withTemplate := func(labels, annotations, nodeLabels map[string]string, taints ...v1beta1.MachineTaint) *v1beta1.MachineSet {
		return testSet(1, func(s *v1beta1.MachineSet) {
			s.Spec.Template.Metadata = v1beta1.ObjectMeta{Labels: labels, Annotations: annotations}
			s.Spec.Template.Spec.Metadata = v1beta1.ObjectMeta{Labels: nodeLabels}
			s.Spec.Template.Spec.Taints = taints
		})
	}
	taint := v1beta1.MachineTaint{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		set         *v1beta1.MachineSet
		machine     *v1beta1.Machine
		wantChanged bool
		want        *v1beta1.Machine
	}{
		"a new Machine gets the template's keys, the set-name label and the key lists": {
			set:         withTemplate(map[string]string{"pool": "a", "zone": "z1"}, map[string]string{"note": "x"}, map[string]string{"role": "web"}, taint),
			machine:     &v1beta1.Machine{},
			wantChanged: true,
			want: &v1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{
					Labels: map[string]string{"pool": "a", "zone": "z1", v1beta1.SetNameLabel: "pool"},
					Annotations: map[string]string{"note": "x",
						TemplateLabelsAnnotation: "pool,zone", TemplateAnnotationsAnnotation: "note"},
				},
				Spec: v1beta1.MachineSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"role": "web"}}, Taints: []v1beta1.MachineTaint{taint}},
			},
		},
		"a key dropped from the template goes; a key set by someone else stays": {
			set: withTemplate(map[string]string{"pool": "a"}, nil, nil),
			machine: &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{"pool": "a", "zone": "z1", "owner": "me", v1beta1.SetNameLabel: "pool"},
				Annotations: map[string]string{"note": "x", "keep": "y", TemplateLabelsAnnotation: "pool,zone", TemplateAnnotationsAnnotation: "note"},
			}, Spec: v1beta1.MachineSpec{Taints: []v1beta1.MachineTaint{taint}}},
			wantChanged: true,
			want: &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{
				Labels:      map[string]string{"pool": "a", "owner": "me", v1beta1.SetNameLabel: "pool"},
				Annotations: map[string]string{"keep": "y", TemplateLabelsAnnotation: "pool"},
			}},
		},
		"an up-to-date Machine is not changed": {
			set: withTemplate(map[string]string{"pool": "a"}, nil, map[string]string{"role": "web"}),
			machine: &v1beta1.Machine{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"pool": "a", v1beta1.SetNameLabel: "pool"},
					Annotations: map[string]string{TemplateLabelsAnnotation: "pool"},
				},
				Spec: v1beta1.MachineSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"role": "web"}}},
			},
			wantChanged: false,
		},
		"the deployment-name label follows the set's": {
			set: testSet(1, func(s *v1beta1.MachineSet) {
				s.Labels = map[string]string{v1beta1.DeploymentNameLabel: "md"}
				s.Spec.Template.Metadata = v1beta1.ObjectMeta{}
			}),
			machine:     &v1beta1.Machine{},
			wantChanged: true,
			want: &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{
				Labels: map[string]string{v1beta1.SetNameLabel: "pool", v1beta1.DeploymentNameLabel: "md"},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := tc.machine.DeepCopy()
			if changed := applyTemplate(tc.set, m); changed != tc.wantChanged {
				t.Fatalf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if tc.want == nil {
				tc.want = tc.machine
			}
			if !equality.Semantic.DeepEqual(m.ObjectMeta, tc.want.ObjectMeta) || !equality.Semantic.DeepEqual(m.Spec, tc.want.Spec) {
				t.Fatalf("got\n%+v %+v\nwant\n%+v %+v", m.ObjectMeta, m.Spec, tc.want.ObjectMeta, tc.want.Spec)
			}
		})
	}
}

func TestNewMachine(t *testing.T) {
	set := testSet(1)
	m := newMachine(set)
	if ref := metav1.GetControllerOf(m); ref == nil || ref.UID != set.UID || ref.Kind != "MachineSet" {
		t.Fatalf("controller reference %+v", ref)
	}
	if len(m.Finalizers) != 1 || m.Finalizers[0] != v1beta1.MachineFinalizer {
		t.Fatalf("finalizers %v: the Machine finalizer must be preset", m.Finalizers)
	}
	if len(m.Name) != len("pool-")+5 || m.Labels[v1beta1.SetNameLabel] != "pool" || m.Labels["pool"] != "a" {
		t.Fatalf("name %s labels %v", m.Name, m.Labels)
	}
}
