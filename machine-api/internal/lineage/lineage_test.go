package lineage

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func machine(name string, annotations map[string]string, finalizers ...string) *v1beta1.Machine {
	return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Finalizers: finalizers}}
}

func deleting(m *v1beta1.Machine) *v1beta1.Machine {
	m.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return m
}

// TestOf protects how a Machine's annotations read: absent or invalid values are no lineage.
func TestOf(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        Lineage
	}{
		"none": {want: Lineage{}},
		"all": {
			annotations: map[string]string{
				v1beta1.LineageAnnotation: "web-a", v1beta1.LineageRetriesAnnotation: "2",
				v1beta1.LineageRemediatedAtAnnotation: "2026-05-04T12:00:00Z", v1beta1.ReplacesAnnotation: "web-b",
			},
			want: Lineage{ID: "web-a", Retries: 2, LastRemediated: t0, Replaces: "web-b"},
		},
		"a count that is no number reads as none": {
			annotations: map[string]string{v1beta1.LineageAnnotation: "web-a", v1beta1.LineageRetriesAnnotation: "many"},
			want:        Lineage{ID: "web-a"},
		},
		"a negative count reads as none": {
			annotations: map[string]string{v1beta1.LineageRetriesAnnotation: "-3"}, want: Lineage{},
		},
		"a time that is no RFC 3339 reads as none": {
			annotations: map[string]string{v1beta1.LineageRemediatedAtAnnotation: "yesterday"}, want: Lineage{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Of(machine("m", tc.annotations)); got != tc.want {
				t.Errorf("Of = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func requested(m *v1beta1.Machine, reason string, at time.Time) *v1beta1.Machine {
	m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{
		Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(at),
	})
	return m
}

// TestInherit protects what a replacement carries from its creation: the lineage named after the
// first Machine remediated (or the one the remediated Machine has), one remediation more (one in
// all when the health check said the lineage starts over), the time the health check asked for
// the remediation, and the name of the Machine it replaces.
func TestInherit(t *testing.T) {
	tests := map[string]struct {
		requested *v1beta1.Machine
		want      Lineage
	}{
		"the first remediation of a slot starts a lineage named after the Machine": {
			requested: requested(machine("web-a", map[string]string{"other": "x"}), v1beta1.RemediationRequestedReason, t0),
			want:      Lineage{ID: "web-a", Retries: 1, LastRemediated: t0, Replaces: "web-a"},
		},
		"a replacement remediated in turn continues the count": {
			requested: requested(machine("web-b", map[string]string{
				v1beta1.LineageAnnotation: "web-a", v1beta1.LineageRetriesAnnotation: "2", v1beta1.LineageRemediatedAtAnnotation: "2026-05-04T11:00:00Z",
			}), v1beta1.RemediationRequestedReason, t0),
			want: Lineage{ID: "web-a", Retries: 3, LastRemediated: t0, Replaces: "web-b"},
		},
		"a lineage the health check resets counts one remediation": {
			requested: requested(machine("web-b", map[string]string{v1beta1.LineageAnnotation: "web-a", v1beta1.LineageRetriesAnnotation: "2"}),
				v1beta1.RemediationRequestedLineageResetReason, t0),
			want: Lineage{ID: "web-a", Retries: 1, LastRemediated: t0, Replaces: "web-b"},
		},
		"a Machine deleted by hand without a request still hands on its count, with no time": {
			requested: machine("web-b", map[string]string{v1beta1.LineageAnnotation: "web-a", v1beta1.LineageRetriesAnnotation: "1"}),
			want:      Lineage{ID: "web-a", Retries: 2, Replaces: "web-b"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			heir := machine("heir", map[string]string{"kept": "yes"})
			Inherit(heir, tc.requested)
			if got := Of(heir); got != tc.want {
				t.Errorf("heir: %+v, want %+v", got, tc.want)
			}
			if heir.Annotations["kept"] != "yes" {
				t.Errorf("the heir's other annotations are left alone: %v", heir.Annotations)
			}
			if Requested(heir) != nil {
				t.Error("an heir is not requested")
			}
		})
	}
}

// TestSort protects which requested Machines of a set still wait for a replacement, read from the
// Machines alone (so a set that restarted between creating the replacement and deleting the
// Machine creates no second one), and in which order they get one.
func TestSort(t *testing.T) {
	marked := func(name string, retries string) *v1beta1.Machine {
		a := map[string]string{v1beta1.LineageAnnotation: name}
		if retries != "" {
			a[v1beta1.LineageRetriesAnnotation] = retries
		}
		return requested(machine(name, a, v1beta1.MachineFinalizer), v1beta1.RemediationRequestedReason, t0)
	}
	heirOf := func(name, of string) *v1beta1.Machine {
		return machine(name, map[string]string{v1beta1.ReplacesAnnotation: of})
	}
	tests := map[string]struct {
		machines           []*v1beta1.Machine
		awaiting, replaced []string
	}{
		"no requested Machine": {
			machines: []*v1beta1.Machine{machine("a", nil), deleting(machine("b", nil, v1beta1.MachineFinalizer))},
		},
		"a requested Machine waits for a replacement": {
			machines: []*v1beta1.Machine{machine("a", nil), marked("b", "")},
			awaiting: []string{"b"},
		},
		"a requested Machine being deleted without a replacement still waits for one": {
			machines: []*v1beta1.Machine{deleting(marked("b", ""))},
			awaiting: []string{"b"},
		},
		"one whose replacement exists is only to be deleted (the set restarted in between)": {
			machines: []*v1beta1.Machine{marked("b", ""), heirOf("c", "b")},
			replaced: []string{"b"},
		},
		"one replaced and being deleted needs nothing more": {
			machines: []*v1beta1.Machine{deleting(marked("b", "")), heirOf("c", "b")},
		},
		"a replacement that is itself being deleted still counts": {
			machines: []*v1beta1.Machine{marked("b", ""), deleting(heirOf("c", "b"))},
			replaced: []string{"b"},
		},
		"the longest lineages first, then by name": {
			machines: []*v1beta1.Machine{marked("a", ""), marked("b", "3"), marked("c", "1"), marked("d", "3")},
			awaiting: []string{"b", "d", "c", "a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			awaiting, replaced := Sort(tc.machines, IsRequested)
			if got := names(awaiting); !slices.Equal(got, tc.awaiting) {
				t.Errorf("awaiting %v, want %v", got, tc.awaiting)
			}
			if got := names(replaced); !slices.Equal(got, tc.replaced) {
				t.Errorf("replaced %v, want %v", got, tc.replaced)
			}
		})
	}
}

// TestHealthy protects when a failure starts a lineage over: only after the Machine passed its
// check (or had its Node) for minHealthyPeriodSeconds before the failure began; never for a
// Machine that never had a Node.
func TestHealthy(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, since time.Time) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(since)}
	}
	minHealthy := 10 * time.Minute
	tests := map[string]struct {
		conditions []metav1.Condition
		failedAt   time.Time
		want       bool
	}{
		"never had a Node": {failedAt: t0.Add(time.Hour)},
		"healthy long enough before an immediate failure": {
			conditions: []metav1.Condition{cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionTrue, t0)},
			failedAt:   t0.Add(minHealthy), want: true,
		},
		"healthy a second too short": {
			conditions: []metav1.Condition{cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionTrue, t0)},
			failedAt:   t0.Add(minHealthy - time.Second),
		},
		"after a suspect phase, counted from the link of its Node": {
			conditions: []metav1.Condition{
				cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionUnknown, t0.Add(time.Hour)),
				cond(v1beta1.NodeLinkedCondition, metav1.ConditionTrue, t0),
			},
			failedAt: t0.Add(time.Hour), want: true,
		},
		"a Node that registered and failed at once (never Ready)": {
			conditions: []metav1.Condition{
				cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionUnknown, t0),
				cond(v1beta1.NodeLinkedCondition, metav1.ConditionTrue, t0),
			},
			failedAt: t0,
		},
		"a Node no longer linked and a check that never passed": {
			conditions: []metav1.Condition{
				cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionUnknown, t0),
				cond(v1beta1.NodeLinkedCondition, metav1.ConditionFalse, t0),
			},
			failedAt: t0.Add(time.Hour),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := machine("m", nil)
			m.Status.Conditions = tc.conditions
			if got := Healthy(m, tc.failedAt, minHealthy); got != tc.want {
				t.Errorf("Healthy = %v, want %v", got, tc.want)
			}
		})
	}
}

func names(ms []*v1beta1.Machine) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
