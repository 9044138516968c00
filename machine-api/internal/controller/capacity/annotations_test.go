package capacity

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestFromNodeTemplate(t *testing.T) {
	cases := map[string]struct {
		nt   *v1beta1.NodeTemplate
		want map[string]string
	}{
		"no nodeTemplate, no annotations": {nt: nil, want: map[string]string{}},
		"capacity, labels and taints": {
			nt: &v1beta1.NodeTemplate{
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
					corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"), corev1.ResourcePods: resource.MustParse("250"),
				},
				Labels: map[string]string{"zone": "a", "disk": "ssd"},
				Taints: []corev1.Taint{
					{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule},
					{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
				},
			},
			want: map[string]string{
				v1beta1.CapacityCPUAnnotation: "16", v1beta1.CapacityMemoryAnnotation: "64Gi",
				v1beta1.CapacityEphemeralDiskAnnotation: "100Gi", v1beta1.CapacityMaxPodsAnnotation: "250",
				v1beta1.CapacityLabelsAnnotation: "disk=ssd,zone=a",
				v1beta1.CapacityTaintsAnnotation: "dedicated=batch:NoSchedule,spot:PreferNoSchedule",
			},
		},
		"a GPU resource becomes gpu-type and gpu-count; other extended resources have no annotation": {
			nt: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("2"), "example.com/dongle": resource.MustParse("1"),
				corev1.ResourceCPU: resource.MustParse("500m"),
			}},
			want: map[string]string{
				v1beta1.CapacityCPUAnnotation: "500m", v1beta1.CapacityGPUTypeAnnotation: "nvidia.com/gpu", v1beta1.CapacityGPUCountAnnotation: "2",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fromNodeTemplate(tc.nt); !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSettled(t *testing.T) {
	cpu, mem := v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation
	want := map[string]string{cpu: "16", mem: "64Gi"}
	cases := map[string]struct {
		annotations map[string]string
		want        map[string]string
		settled     bool
	}{
		"exactly what is wanted, other annotations aside": {annotations: map[string]string{"other": "x", cpu: "16", mem: "64Gi"}, want: want, settled: true},
		"nothing wanted, none there":                      {annotations: map[string]string{"other": "x"}, want: map[string]string{}, settled: true},
		"one missing":                                     {annotations: map[string]string{cpu: "16"}, want: want},
		"one with another value (ours to update, or set by hand: the API server knows)": {
			annotations: map[string]string{cpu: "8", mem: "64Gi"}, want: want},
		"one not wanted (ours to remove, or set by hand)": {annotations: map[string]string{cpu: "16"}, want: map[string]string{}},
		"an earlier version's record is left to migrate": {
			annotations: map[string]string{cpu: "16", mem: "64Gi", recordAnnotation: `{}`}, want: want},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := settled(tc.annotations, tc.want); got != tc.settled {
				t.Fatalf("settled = %v, want %v", got, tc.settled)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	cpu, mem := v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation
	gr := schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "machinesets"}
	cause := func(field, manager string) metav1.StatusCause {
		return metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Field: field,
			Message: `conflict with "` + manager + `" using machine.machineapi.dev/v1beta1 at 2026-05-04T12:00:00Z`}
	}
	cases := map[string]struct {
		err    error
		owners map[string]string
		ok     bool
	}{
		"two capacity annotations set by hand, as the API server says it": {
			err: apierrors.NewApplyConflict([]metav1.StatusCause{
				cause(".metadata.annotations."+cpu, "kubectl-annotate"), cause(".metadata.annotations."+mem, "kubectl-edit")}, "Apply failed with 2 conflicts"),
			owners: map[string]string{cpu: `"kubectl-annotate"`, mem: `"kubectl-edit"`}, ok: true,
		},
		"wrapped": {
			err:    fmt.Errorf("applying: %w", apierrors.NewApplyConflict([]metav1.StatusCause{cause(".metadata.annotations."+cpu, "k")}, "x")),
			owners: map[string]string{cpu: `"k"`}, ok: true,
		},
		"an owner the message does not quote": {
			err: apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
				Field: ".metadata.annotations." + cpu, Message: "conflict"}}, "x"),
			owners: map[string]string{cpu: "another field manager"}, ok: true,
		},
		"a conflict on a field that is no capacity annotation": {
			err: apierrors.NewApplyConflict([]metav1.StatusCause{
				cause(".metadata.annotations."+cpu, "k"), cause(".metadata.annotations.other", "k")}, "x"),
		},
		"an optimistic-lock or UID conflict, without causes": {
			err: apierrors.NewConflict(gr, "s", errors.New("uid mismatch")),
		},
		"another error": {err: apierrors.NewInternalError(errors.New("etcd"))},
		"no error":      {err: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			owners, ok := conflicts(tc.err)
			if ok != tc.ok || !maps.Equal(owners, tc.owners) {
				t.Fatalf("conflicts = %v, %v; want %v, %v", owners, ok, tc.owners, tc.ok)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	cpu, mem, taints := v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation, v1beta1.CapacityTaintsAnnotation
	got := compare(
		map[string]string{cpu: "16", mem: "64Gi", taints: "a:NoSchedule", "other": "x"},
		map[string]string{cpu: "32", mem: "100Gi", "other": "y"},
		map[string]string{mem: `"kubectl-annotate"`}, "big")
	want := "set " + cpu + "=32 from the nodeTemplate of MachineClass big; removed " + taints +
		` (no nodeTemplate value for them); left alone: ` + mem + `=100Gi (set by "kubectl-annotate")`
	if got.String() != want || !got.changed() {
		t.Errorf("report %q (changed %v), want %q", got, got.changed(), want)
	}
	if same := compare(map[string]string{cpu: "8"}, map[string]string{cpu: "8"}, map[string]string{cpu: `"k"`}, "big"); same.changed() {
		t.Errorf("nothing changed but the report says %q", same)
	}
}

func TestTakeOver(t *testing.T) {
	cpu, mem, gpu := v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation, v1beta1.CapacityGPUCountAnnotation
	at := metav1.NewTime(time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC))
	fields := func(s string) *metav1.FieldsV1 { return metav1.NewFieldsV1(s) }
	// What an earlier version left: the old manager (a merge patch) owns the keys it wrote and the
	// record; a user's edit owns memory.
	old := metav1.ManagedFieldsEntry{Manager: "machine-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "machine.machineapi.dev/v1beta1",
		FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:annotations":{".":{},"f:` + cpu + `":{},"f:` + gpu + `":{},"f:` + recordAnnotation + `":{}},"f:finalizers":{}}}`)}
	user := metav1.ManagedFieldsEntry{Manager: "kubectl-annotate", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "machine.machineapi.dev/v1beta1",
		FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:annotations":{"f:` + mem + `":{}}}}`)}
	recordOnly := metav1.ManagedFieldsEntry{Manager: "old-tool", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: fields(`{"f:metadata":{"f:annotations":{"f:` + recordAnnotation + `":{}}}}`)}
	mine := metav1.ManagedFieldsEntry{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "machine.machineapi.dev/v1beta1",
		Time: &at, FieldsType: "FieldsV1"}
	withFields := func(e metav1.ManagedFieldsEntry, s string) metav1.ManagedFieldsEntry {
		e.FieldsV1 = fields(s)
		return e
	}
	record := `{"` + cpu + `":"16","` + mem + `":"64Gi","` + gpu + `":"1"}`

	cases := map[string]struct {
		annotations map[string]string
		managed     []metav1.ManagedFieldsEntry
		want        []metav1.ManagedFieldsEntry
		ours        []string
		ok          bool
	}{
		"no record: nothing to take over": {
			annotations: map[string]string{cpu: "16"}, managed: []metav1.ManagedFieldsEntry{old},
		},
		"the recorded keys still holding the recorded value are ours; one changed by hand stays its owner's; the record goes": {
			annotations: map[string]string{cpu: "16", mem: "100Gi", gpu: "1", recordAnnotation: record},
			managed:     []metav1.ManagedFieldsEntry{old, user, recordOnly},
			want: []metav1.ManagedFieldsEntry{
				withFields(old, `{"f:metadata":{"f:annotations":{".":{}},"f:finalizers":{}}}`),
				user,
				withFields(mine, `{"f:metadata":{"f:annotations":{"f:`+cpu+`":{},"f:`+gpu+`":{}}}}`),
			},
			ours: []string{cpu, gpu}, ok: true,
		},
		"an entry of ours already there gets the keys": {
			annotations: map[string]string{cpu: "16", recordAnnotation: record},
			managed:     []metav1.ManagedFieldsEntry{withFields(mine, `{"f:metadata":{"f:annotations":{"f:`+mem+`":{}}}}`), old},
			want: []metav1.ManagedFieldsEntry{
				withFields(mine, `{"f:metadata":{"f:annotations":{"f:`+cpu+`":{},"f:`+mem+`":{}}}}`),
				withFields(old, `{"f:metadata":{"f:annotations":{".":{},"f:`+gpu+`":{}},"f:finalizers":{}}}`),
			},
			ours: []string{cpu}, ok: true,
		},
		"an unreadable record: nothing is ours, the record still goes": {
			annotations: map[string]string{cpu: "16", recordAnnotation: "{garbage"},
			managed:     []metav1.ManagedFieldsEntry{old},
			want:        []metav1.ManagedFieldsEntry{withFields(old, `{"f:metadata":{"f:annotations":{".":{},"f:`+cpu+`":{},"f:`+gpu+`":{}},"f:finalizers":{}}}`)},
			ok:          true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ours, ok, err := takeOver(tc.annotations, tc.managed, FieldOwner, at)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok || !slices.Equal(ours, tc.ours) {
				t.Fatalf("took over %v (ok %v), want %v (ok %v)", ours, ok, tc.ours, tc.ok)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("managed fields\n%s\nwant\n%s", dump(got), dump(tc.want))
			}
		})
	}
}

func dump(managed []metav1.ManagedFieldsEntry) string {
	var b strings.Builder
	for _, e := range managed {
		fmt.Fprintf(&b, "%s %s %s\n", e.Manager, e.Operation, e.FieldsV1.GetRawString())
	}
	return b.String()
}
