package uptodate

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func value(raw string) v1beta1.ProviderSpec {
	return v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(raw)}}
}

func classRef(name string) v1beta1.ProviderSpec {
	return v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: name}}
}

func machineClass(name, providerSpec string) *v1beta1.MachineClass {
	return &v1beta1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.MachineClassSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)}}}
}

func TestDecide(t *testing.T) {
	provisioned := func(at time.Time) func(*v1beta1.Machine) {
		return func(m *v1beta1.Machine) { m.Status.ProvisionedTime = ptr.To(metav1.NewTime(at)) }
	}
	machine := func(spec v1beta1.MachineSpec, mutate ...func(*v1beta1.Machine)) *v1beta1.Machine {
		m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Generation: 1}, Spec: spec}
		for _, f := range mutate {
			f(m)
		}
		return m
	}
	deployment := func(spec v1beta1.MachineSpec, rollout *v1beta1.MachineDeploymentRollout) Desired {
		return ForDeployment(&v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: v1beta1.MachineDeploymentSpec{Template: v1beta1.MachineTemplateSpec{Spec: spec}, Rollout: rollout}})
	}
	small, large := value(`{"instanceType":"small","zone":"a"}`), value(`{"zone":"a", "instanceType":"large"}`)
	edited := machineClass("pool", `{"image":"v2","instanceType":"small"}`)
	recordedFrom := func(class *v1beta1.MachineClass) func(*v1beta1.Machine) {
		return func(m *v1beta1.Machine) { m.Status.MachineClass = RecordClass(class) }
	}
	original := machineClass("pool", `{"image":"v1","instanceType":"small"}`)

	cases := map[string]struct {
		m           *v1beta1.Machine
		class       *v1beta1.MachineClass
		d           Desired
		now         time.Time
		wantReasons []string // reasons of the causes, in order
		wantReplace bool
		wantMessage string // a substring of the UpToDate message
		wantInPlace string // the in-place changes, rendered
		wantDue     time.Time
	}{
		"the same template: up to date": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: small}), d: deployment(v1beta1.MachineSpec{ProviderSpec: small}, nil),
			wantMessage: "matches the template of MachineDeployment web",
		},
		"a providerSpec change names the path, old → new, and is replaced": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: small}), d: deployment(v1beta1.MachineSpec{ProviderSpec: large}, nil),
			wantReasons: []string{ReasonTemplateChanged}, wantReplace: true,
			wantMessage: `differs from the template of MachineDeployment web: spec.providerSpec.value.instanceType: "small" → "large"`,
		},
		"a kubelet version change names the path": {
			m:           machine(v1beta1.MachineSpec{ProviderSpec: small}),
			d:           deployment(v1beta1.MachineSpec{ProviderSpec: small, Versions: &v1beta1.MachineVersions{Kubelet: "v1.37.2"}}, nil),
			wantReasons: []string{ReasonTemplateChanged}, wantReplace: true,
			wantMessage: `spec.versions.kubelet: (none) → "v1.37.2"`,
		},
		"only in-place fields differ: up to date, listed as in place": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: small, Deletion: &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](60)}}),
			d: deployment(v1beta1.MachineSpec{ProviderSpec: small, Deletion: &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](120)},
				Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}, nil),
			wantInPlace: `spec.deletion.nodeDrainTimeoutSeconds: 60 → 120, spec.metadata.labels["node-role.kubernetes.io/worker"]: (none) → ""`,
		},
		"a MachineClass edited since the instance was created names the class and the path": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, recordedFrom(original)), class: edited,
			d:           deployment(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, nil),
			wantReasons: []string{ReasonMachineClassChanged}, wantReplace: true,
			wantMessage: "MachineClass pool changed since the instance was created: spec.providerSpec.image",
		},
		"a MachineClass edit under machineClassChanges Ignore is reported, not replaced": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, recordedFrom(original)), class: edited,
			d:           deployment(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, &v1beta1.MachineDeploymentRollout{MachineClassChanges: v1beta1.MachineClassChangeIgnore}),
			wantReasons: []string{ReasonMachineClassChanged},
			wantMessage: "(not replaced: spec.rollout.machineClassChanges is Ignore)",
		},
		"a Machine without a class record (not provisioned yet) has no class cause": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}), class: edited,
			d: deployment(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, nil),
		},
		"a standalone Machine's class edit is reported; nothing replaces it": {
			m: machine(v1beta1.MachineSpec{ProviderSpec: classRef("pool")}, recordedFrom(original)), class: edited,
			wantReasons: []string{ReasonMachineClassChanged},
		},
		"a standalone set's template change is reported; a set replaces nothing": {
			m:           machine(v1beta1.MachineSpec{ProviderSpec: small}),
			d:           ForSet(&v1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: v1beta1.MachineSetSpec{Template: v1beta1.MachineTemplateSpec{Spec: v1beta1.MachineSpec{ProviderSpec: large}}}}),
			wantReasons: []string{ReasonTemplateChanged}, wantMessage: "differs from the template of MachineSet s",
		},
		"rollout.after passed, instance created before it": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(-time.Hour))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{After: ptr.To(metav1.NewTime(t0))}),
			now: t0, wantReasons: []string{ReasonRolloutAfter}, wantReplace: true,
			wantMessage: "instance created at 2026-05-04T11:00:00Z, before spec.rollout.after (2026-05-04T12:00:00Z) of MachineDeployment web",
		},
		"rollout.after in the future: up to date until then": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(-time.Hour))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{After: ptr.To(metav1.NewTime(t0.Add(time.Hour)))}),
			now: t0, wantDue: t0.Add(time.Hour),
		},
		"rollout.after passed, instance created after it": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(time.Minute))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{After: ptr.To(metav1.NewTime(t0))}),
			now: t0.Add(time.Hour),
		},
		"older than machineMaxAgeSeconds": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(-2*time.Hour))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr.To[int32](3600)}),
			now: t0, wantReasons: []string{ReasonMaxAgeExceeded}, wantReplace: true,
			wantMessage: "instance is 2h0m0s old, older than spec.rollout.machineMaxAgeSeconds (3600) of MachineDeployment web",
		},
		"younger than machineMaxAgeSeconds: due when it gets that old": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(-10*time.Minute))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr.To[int32](3600)}),
			now: t0, wantDue: t0.Add(50 * time.Minute),
		},
		"no instance yet: never too old": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: small}, &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr.To[int32](1), After: ptr.To(metav1.NewTime(t0))}),
			now: t0.Add(time.Hour),
		},
		"every cause is named, the first gives the reason": {
			m:   machine(v1beta1.MachineSpec{ProviderSpec: small}, provisioned(t0.Add(-2*time.Hour))),
			d:   deployment(v1beta1.MachineSpec{ProviderSpec: large}, &v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptr.To[int32](3600)}),
			now: t0, wantReasons: []string{ReasonTemplateChanged, ReasonMaxAgeExceeded}, wantReplace: true,
			wantMessage: `"small" → "large"; instance is 2h0m0s old`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dec := Decide(tc.m, tc.class, tc.d, tc.now)
			var reasons []string
			for _, c := range dec.Causes {
				reasons = append(reasons, c.Reason)
			}
			if strings.Join(reasons, ",") != strings.Join(tc.wantReasons, ",") {
				t.Fatalf("causes %v, want %v: %+v", reasons, tc.wantReasons, dec.Causes)
			}
			if replace, _ := dec.Replace(); replace != tc.wantReplace {
				t.Fatalf("replace = %v, want %v", replace, tc.wantReplace)
			}
			if got := changes(dec.InPlace); got != tc.wantInPlace {
				t.Fatalf("in place %q, want %q", got, tc.wantInPlace)
			}
			if !dec.Due.Equal(tc.wantDue) {
				t.Fatalf("due %v, want %v", dec.Due, tc.wantDue)
			}
			// Replacement (what a deployment uses for its current set) decides the same, without
			// the in-place differences.
			repl := NewDecider(tc.d, tc.class).Replacement(tc.m, tc.now)
			if !reflect.DeepEqual(repl.Causes, dec.Causes) || !repl.Due.Equal(dec.Due) || len(repl.InPlace) > 0 {
				t.Fatalf("Replacement = %+v, want Decide's causes and due without in-place changes: %+v", repl, dec)
			}
			c := Condition(dec, tc.d, tc.m.Generation)
			if want := len(tc.wantReasons) == 0; (c.Status == metav1.ConditionTrue) != want || c.Type != v1beta1.UpToDateCondition || c.ObservedGeneration != 1 {
				t.Fatalf("condition %+v", c)
			}
			if len(tc.wantReasons) > 0 && c.Reason != tc.wantReasons[0] {
				t.Fatalf("reason %s, want %s", c.Reason, tc.wantReasons[0])
			}
			if !strings.Contains(c.Message, tc.wantMessage) {
				t.Fatalf("message %q does not say %q", c.Message, tc.wantMessage)
			}
		})
	}
}

func changes(cs []Change) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return strings.Join(out, ", ")
}

// TestConditionMessageIsBounded: a template with many changed fields and long values gives a
// message of at most maxMessage runes that names maxShown of them and counts the others.
func TestConditionMessageIsBounded(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("{")
	b.WriteString("{")
	for i := range 200 {
		if i > 0 {
			a.WriteString(",")
			b.WriteString(",")
		}
		a.WriteString(`"field` + string(rune('a'+i%26)) + strings.Repeat("x", i) + `":"` + strings.Repeat("old", 30) + `"`)
		b.WriteString(`"field` + string(rune('a'+i%26)) + strings.Repeat("x", i) + `":"` + strings.Repeat("new", 30) + `"`)
	}
	a.WriteString("}")
	b.WriteString("}")
	m := &v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderSpec: value(a.String())}}
	d := ForDeployment(&v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1beta1.MachineDeploymentSpec{Template: v1beta1.MachineTemplateSpec{Spec: v1beta1.MachineSpec{ProviderSpec: value(b.String())}}}})
	c := Condition(Decide(m, nil, d, t0), d, 1)
	if n := utf8.RuneCountInString(c.Message); n > maxMessage {
		t.Fatalf("message of %d runes, more than %d", n, maxMessage)
	}
	if !strings.Contains(c.Message, "and 195 more") {
		t.Fatalf("message %q does not count the changes it leaves out", c.Message)
	}
	if !strings.Contains(c.Message, `"oldoldoldoldoldoldoldoldoldoldoldoldoldoldoldo… → "newnew`) {
		t.Fatalf("message %q does not shorten long values", c.Message)
	}
}

// TestDecideInPlaceForADeploymentsMachine: the labels a deployment adds to its sets' templates
// (set-name, deployment-name), which its Machines list among their template labels, are no
// difference.
func TestDecideInPlaceForADeploymentsMachine(t *testing.T) {
	tmpl := v1beta1.MachineTemplateSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{"pool": "web"}}, Spec: v1beta1.MachineSpec{ProviderSpec: value(`{}`)}}
	setTmpl := tmpl.DeepCopy()
	setTmpl.Metadata.Labels[v1beta1.SetNameLabel] = "web-abc"
	setTmpl.Metadata.Labels[v1beta1.DeploymentNameLabel] = "web"
	m := &v1beta1.Machine{Spec: setTmpl.Spec}
	ApplyInPlace(setTmpl, m) // as the set created it
	d := ForDeployment(&v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1beta1.MachineDeploymentSpec{Template: tmpl}})
	if dec := Decide(m, nil, d, t0); !dec.UpToDate() || len(dec.InPlace) > 0 {
		t.Fatalf("a Machine as its set made it differs: %+v", dec)
	}
}
