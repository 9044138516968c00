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

// TestMarkAndInherit protects the hand-over: the mark starts a lineage named after the first
// Machine remediated (or keeps the one it has, with its count), and the heir takes it with one
// remediation more, the time of that remediation and the name of the Machine it replaces.
func TestMarkAndInherit(t *testing.T) {
	first := machine("web-a", map[string]string{"other": "kept"}, v1beta1.MachineFinalizer)
	Mark(first, t0)
	if got := Of(first); got != (Lineage{ID: "web-a", LastRemediated: t0}) {
		t.Errorf("marked first Machine: %+v", got)
	}
	if !AwaitsHandOver(first) || !slices.Equal(first.Finalizers, []string{v1beta1.MachineFinalizer, v1beta1.LineageFinalizer}) {
		t.Errorf("finalizers %v", first.Finalizers)
	}
	if first.Annotations["other"] != "kept" {
		t.Errorf("other annotations are left alone: %v", first.Annotations)
	}

	heir := machine("web-b", nil)
	Inherit(heir, first)
	if got := Of(heir); got != (Lineage{ID: "web-a", Retries: 1, LastRemediated: t0, Replaces: "web-a"}) {
		t.Errorf("heir: %+v", got)
	}
	if AwaitsHandOver(heir) {
		t.Error("an heir is not marked")
	}

	Mark(heir, t0.Add(time.Hour))
	next := machine("web-c", nil)
	Inherit(next, heir)
	if got := Of(next); got != (Lineage{ID: "web-a", Retries: 2, LastRemediated: t0.Add(time.Hour), Replaces: "web-b"}) {
		t.Errorf("second heir: %+v", got)
	}

	if !Reset(next) {
		t.Error("Reset found no count")
	}
	if got := Of(next); got != (Lineage{ID: "web-a", Replaces: "web-b"}) {
		t.Errorf("after Reset: %+v", got)
	}
	if Reset(next) {
		t.Error("a second Reset found a count")
	}
	if !Release(first) || AwaitsHandOver(first) || Release(first) {
		t.Errorf("Release: finalizers %v", first.Finalizers)
	}
}

// TestSort protects which marked Machines of a set still wait for an heir, read from the Machines
// alone (so a set that restarted between creating the heir and releasing the finalizer creates no
// second heir), and in which order they get one.
func TestSort(t *testing.T) {
	marked := func(name string, retries string) *v1beta1.Machine {
		a := map[string]string{v1beta1.LineageAnnotation: name}
		if retries != "" {
			a[v1beta1.LineageRetriesAnnotation] = retries
		}
		return deleting(machine(name, a, v1beta1.MachineFinalizer, v1beta1.LineageFinalizer))
	}
	heirOf := func(name, of string) *v1beta1.Machine {
		return machine(name, map[string]string{v1beta1.ReplacesAnnotation: of})
	}
	tests := map[string]struct {
		machines             []*v1beta1.Machine
		awaiting, handedOver []string
	}{
		"no marked Machine": {
			machines: []*v1beta1.Machine{machine("a", nil), deleting(machine("b", nil, v1beta1.MachineFinalizer))},
		},
		"a marked Machine being deleted waits for an heir": {
			machines: []*v1beta1.Machine{machine("a", nil), marked("b", "")},
			awaiting: []string{"b"},
		},
		"one whose heir exists is handed over (the set restarted before releasing it)": {
			machines:   []*v1beta1.Machine{marked("b", ""), heirOf("c", "b")},
			handedOver: []string{"b"},
		},
		"an heir that is itself being deleted still counts": {
			machines:   []*v1beta1.Machine{marked("b", ""), deleting(heirOf("c", "b"))},
			handedOver: []string{"b"},
		},
		"a marked Machine not being deleted (the delete failed) waits for nothing": {
			machines: []*v1beta1.Machine{machine("b", nil, v1beta1.LineageFinalizer)},
		},
		"the longest lineages first, then by name": {
			machines: []*v1beta1.Machine{marked("a", ""), marked("b", "3"), marked("c", "1"), marked("d", "3")},
			awaiting: []string{"b", "d", "c", "a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			awaiting, handed := Sort(tc.machines)
			if got := names(awaiting); !slices.Equal(got, tc.awaiting) {
				t.Errorf("awaiting %v, want %v", got, tc.awaiting)
			}
			if got := names(handed); !slices.Equal(got, tc.handedOver) {
				t.Errorf("handed over %v, want %v", got, tc.handedOver)
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
