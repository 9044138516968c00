package capacity

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// keys are every annotation this package manages.
var keys = []string{
	v1beta1.CapacityCPUAnnotation, v1beta1.CapacityMemoryAnnotation, v1beta1.CapacityEphemeralDiskAnnotation,
	v1beta1.CapacityMaxPodsAnnotation, v1beta1.CapacityGPUTypeAnnotation, v1beta1.CapacityGPUCountAnnotation,
	v1beta1.CapacityLabelsAnnotation, v1beta1.CapacityTaintsAnnotation,
}

// fromNodeTemplate returns the capacity annotations that describe nt's Node, none for a nil nt.
func fromNodeTemplate(nt *v1beta1.NodeTemplate) map[string]string {
	out := map[string]string{}
	if nt == nil {
		return out
	}
	quantities := map[corev1.ResourceName]string{
		corev1.ResourceCPU:              v1beta1.CapacityCPUAnnotation,
		corev1.ResourceMemory:           v1beta1.CapacityMemoryAnnotation,
		corev1.ResourceEphemeralStorage: v1beta1.CapacityEphemeralDiskAnnotation,
	}
	for _, name := range slices.Sorted(maps.Keys(nt.Capacity)) {
		q := nt.Capacity[name]
		switch key, ok := quantities[name]; {
		case ok:
			out[key] = q.String()
		case name == corev1.ResourcePods:
			out[v1beta1.CapacityMaxPodsAnnotation] = fmt.Sprint(q.Value())
		case strings.HasSuffix(string(name), "/gpu") && out[v1beta1.CapacityGPUTypeAnnotation] == "":
			out[v1beta1.CapacityGPUTypeAnnotation] = string(name)
			out[v1beta1.CapacityGPUCountAnnotation] = fmt.Sprint(q.Value())
		}
	}
	if len(nt.Labels) > 0 {
		labels := make([]string, 0, len(nt.Labels))
		for _, k := range slices.Sorted(maps.Keys(nt.Labels)) {
			labels = append(labels, k+"="+nt.Labels[k])
		}
		out[v1beta1.CapacityLabelsAnnotation] = strings.Join(labels, ",")
	}
	if len(nt.Taints) > 0 {
		taints := make([]string, 0, len(nt.Taints))
		for _, t := range nt.Taints {
			s := t.Key
			if t.Value != "" {
				s += "=" + t.Value
			}
			taints = append(taints, s+":"+string(t.Effect))
		}
		sort.Strings(taints)
		out[v1beta1.CapacityTaintsAnnotation] = strings.Join(taints, ",")
	}
	return out
}

// change is what one write does to an object's annotations.
type change struct {
	// patch holds the annotations to set (a value) or remove (nil), the record included.
	patch map[string]*string
	// set are the capacity annotations written, key=value; removed the ones removed; kept the ones
	// left alone because someone else set them.
	set, removed, kept []string
}

// plan compares an object's annotations with want (fromNodeTemplate) and the record of what the
// controller wrote before (v1beta1.CapacityAnnotationsAnnotation), and returns the change that
// brings the annotations the controller owns to want, touching none that someone else set (see
// the package documentation). The change is empty when there is nothing to do.
func plan(annotations, want map[string]string) change {
	record := readRecord(annotations[v1beta1.CapacityAnnotationsAnnotation])
	c := change{patch: map[string]*string{}}
	newRecord := map[string]string{}
	for _, k := range keys {
		cur, present := annotations[k]
		wrote, recorded := record[k]
		target, wanted := want[k]
		switch {
		case present && (!recorded || cur != wrote):
			if wanted && cur != target {
				c.kept = append(c.kept, k)
			}
		case wanted:
			newRecord[k] = target
			if cur != target || !present {
				c.patch[k] = &target
				c.set = append(c.set, k+"="+target)
			}
		case present:
			c.patch[k] = nil
			c.removed = append(c.removed, k)
		}
	}
	if !maps.Equal(newRecord, record) || (len(newRecord) == 0 && annotations[v1beta1.CapacityAnnotationsAnnotation] != "") {
		if len(newRecord) == 0 {
			c.patch[v1beta1.CapacityAnnotationsAnnotation] = nil
		} else {
			data, _ := json.Marshal(newRecord) // a map of strings always marshals
			v := string(data)
			c.patch[v1beta1.CapacityAnnotationsAnnotation] = &v
		}
	}
	return c
}

// readRecord parses the record annotation; an unreadable record counts as empty (every present
// capacity annotation then counts as someone else's).
func readRecord(s string) map[string]string {
	out := map[string]string{}
	if s == "" {
		return out
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return map[string]string{}
	}
	return out
}
