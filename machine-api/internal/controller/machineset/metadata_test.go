package machineset

import (
	"errors"
	"net/url"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/pending"
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

// TestExpectations: a set awaits the Machines it created (listed) and deleted (deleting or gone)
// for at most expectationsTimeout, and a set re-created under the same name inherits nothing.
func TestExpectations(t *testing.T) {
	set := testSet(1)
	fake := clocktesting.NewFakePassiveClock(t0)
	var c clock.PassiveClock = fake
	e := newExpectations(c)
	old := machine("old", 0)
	e.Created(set, "new")
	e.Deleted(set, "old", old.UID)
	e.Created(set, "failed")
	e.Forget(set, "failed")

	p := e.Outstanding(set, pending.In(map[string]*v1beta1.Machine{"old": old}))
	if !p.Appear["new"] || !p.Gone["old"] || p.Appear["failed"] {
		t.Fatalf("outstanding %+v: want new to appear and old to go, the forgotten create not awaited", p)
	}
	deleting(old)
	p = e.Outstanding(set, pending.In(map[string]*v1beta1.Machine{"old": old, "new": machine("new", 0)}))
	if p.Len() != 0 {
		t.Fatalf("outstanding %+v after the cache showed both writes", p)
	}

	e.Created(set, "lost")
	fake.SetTime(t0.Add(expectationsTimeout))
	if p := e.Outstanding(set, pending.In(map[string]*v1beta1.Machine{})); p.Len() != 0 {
		t.Fatalf("expectations outlived their timeout: %+v", p)
	}

	e.Created(set, "x")
	other := set.DeepCopy()
	other.UID = "recreated"
	if p := e.Outstanding(other, pending.In(map[string]*v1beta1.Machine{})); p.Len() != 0 {
		t.Fatalf("a set re-created under the same name inherited expectations: %+v", p)
	}
}

// TestUnsureCreates: a create that failed without saying whether it was stored stays awaited (the
// set creates nothing for that gap) until it is due to be checked with the API server.
func TestUnsureCreates(t *testing.T) {
	set := testSet(1)
	fake := clocktesting.NewFakePassiveClock(t0)
	e := newExpectations(fake)
	e.Created(set, "maybe")
	e.Unsure(set, "maybe", unsureCreateCheck)
	none := pending.In(map[string]*v1beta1.Machine{})

	p := e.Outstanding(set, none)
	if !p.Appear["maybe"] || len(p.Check) != 0 {
		t.Fatalf("right after the failed create: %+v; want it awaited, not checked yet", p)
	}
	if want := t0.Add(unsureCreateCheck); !p.Deadline.Equal(want) {
		t.Fatalf("come back at %s, want %s (when it is due to be checked)", p.Deadline, want)
	}
	fake.SetTime(t0.Add(unsureCreateCheck))
	p = e.Outstanding(set, none)
	if !p.Appear["maybe"] || !p.Check["maybe"] {
		t.Fatalf("once due: %+v; want it still awaited and due to be checked", p)
	}
	if p := e.Outstanding(set, pending.In(map[string]*v1beta1.Machine{"maybe": machine("maybe", 0)})); p.Len()+len(p.Check) != 0 {
		t.Fatalf("the cache shows it: %+v; want nothing awaited", p)
	}
}

func TestRefused(t *testing.T) {
	gr := schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "machines"}
	tests := map[string]struct {
		err  error
		want bool
	}{
		"invalid":                 {apierrors.NewInvalid(v1beta1.GroupVersion.WithKind("Machine").GroupKind(), "m", nil), true},
		"forbidden":               {apierrors.NewForbidden(gr, "m", errors.New("quota")), true},
		"already exists":          {apierrors.NewAlreadyExists(gr, "m"), true},
		"too many requests":       {apierrors.NewTooManyRequests("slow down", 1), true},
		"connection reset":        {&url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: syscall.ECONNRESET}, false},
		"server timeout":          {apierrors.NewServerTimeout(gr, "create", 1), false},
		"timeout":                 {apierrors.NewTimeoutError("took too long", 1), false},
		"internal error":          {apierrors.NewInternalError(errors.New("etcd")), false},
		"service unavailable 503": {apierrors.NewServiceUnavailable("restarting"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := refused(tc.err); got != tc.want {
				t.Errorf("refused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
