package capacity

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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

func TestPlan(t *testing.T) {
	cpu, mem, rec := v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation, v1beta1.CapacityAnnotationsAnnotation
	want16 := map[string]string{cpu: "16", mem: "64Gi"}
	cases := map[string]struct {
		annotations map[string]string
		want        map[string]string
		// after is the object's annotations once the change is applied.
		after map[string]string
		kept  int
	}{
		"first write: the annotations and their record": {
			annotations: map[string]string{"other": "x"}, want: want16,
			after: map[string]string{"other": "x", cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
		},
		"up to date: nothing to do": {
			annotations: map[string]string{cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
			want:        want16,
			after:       map[string]string{cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
		},
		"the class changed: ours follow it": {
			annotations: map[string]string{cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
			want:        map[string]string{cpu: "32"},
			after:       map[string]string{cpu: "32", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"32"}`},
		},
		"set by hand before we ever wrote: left alone, not recorded": {
			annotations: map[string]string{cpu: "8"}, want: want16,
			after: map[string]string{cpu: "8", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`}, kept: 1,
		},
		"changed by hand after we wrote it: left alone, and no longer ours": {
			annotations: map[string]string{cpu: "8", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
			want:        want16,
			after:       map[string]string{cpu: "8", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`}, kept: 1,
		},
		"a user's annotation stays when the class loses its nodeTemplate; ours go with the record": {
			annotations: map[string]string{cpu: "8", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
			want:        map[string]string{},
			after:       map[string]string{cpu: "8"},
		},
		"removed by hand: written again": {
			annotations: map[string]string{mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
			want:        want16,
			after:       map[string]string{cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/cpu":"16","capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
		},
		"an unreadable record: present annotations count as someone else's": {
			annotations: map[string]string{cpu: "16", rec: "{garbage"}, want: want16,
			after: map[string]string{cpu: "16", mem: "64Gi", rec: `{"capacity.cluster-autoscaler.kubernetes.io/memory":"64Gi"}`},
		},
		"nothing wanted, nothing written: nothing to do": {
			annotations: map[string]string{"other": "x"}, want: map[string]string{},
			after: map[string]string{"other": "x"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := plan(tc.annotations, tc.want)
			after := maps.Clone(tc.annotations)
			for k, v := range c.patch {
				if v == nil {
					delete(after, k)
				} else {
					after[k] = *v
				}
			}
			if !maps.Equal(after, tc.after) {
				t.Fatalf("annotations after the change %v, want %v", after, tc.after)
			}
			if len(c.kept) != tc.kept {
				t.Errorf("kept %v, want %d", c.kept, tc.kept)
			}
			if again := plan(after, tc.want); len(again.patch) != 0 {
				t.Errorf("planning again changes %v: the change is not applied once", again.patch)
			}
		})
	}
}
