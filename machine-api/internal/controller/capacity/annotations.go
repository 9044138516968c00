package capacity

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// settled reports whether annotations already say exactly want, with no record of an earlier
// version left: then there is nothing to apply. Anything else is applied, even when the difference
// may be someone else's (only the API server knows whose a key is).
func settled(annotations, want map[string]string) bool {
	if _, ok := annotations[recordAnnotation]; ok {
		return false
	}
	for _, k := range keys {
		cur, present := annotations[k]
		target, wanted := want[k]
		if present != wanted || cur != target {
			return false
		}
	}
	return true
}

// without returns want less the keys of left.
func without(want, left map[string]string) map[string]string {
	out := maps.Clone(want)
	for k := range left {
		delete(out, k)
	}
	return out
}

// annotationsPath is how a server-side apply conflict names an annotation: the field path
// ".metadata.annotations.<key>".
const annotationsPath = ".metadata.annotations."

// conflicts returns the capacity annotations a server-side apply failed on because another field
// manager owns them with another value, each with that manager's name as the API server quotes it
// (`"kubectl-annotate"`). ok is false when err is not such a conflict, or also names another field.
func conflicts(err error) (owners map[string]string, ok bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsConflict(err) || status.Status().Details == nil {
		return nil, false
	}
	owners = map[string]string{}
	for _, cause := range status.Status().Details.Causes {
		key, annotation := strings.CutPrefix(cause.Field, annotationsPath)
		if cause.Type != metav1.CauseTypeFieldManagerConflict || !annotation || !slices.Contains(keys, key) {
			return nil, false
		}
		// "conflict with \"kubectl-annotate\" using machine.machineapi.dev/v1beta1 at <time>"
		manager, err := strconv.QuotedPrefix(strings.TrimPrefix(cause.Message, "conflict with "))
		if err != nil {
			manager = "another field manager"
		}
		owners[key] = manager
	}
	return owners, len(owners) > 0
}

// report is what one reconcile did to an object's capacity annotations, for its event and log.
type report struct {
	// class is the MachineClass the values come from.
	class string
	// set are the annotations written, key=value; removed the ones removed.
	set, removed []string
	// left are the annotations wanted but left alone because someone else set them, key=value
	// (set by "manager").
	left []string
}

// compare says what went from before to after (the object's annotations before the apply and as
// the API server stored them), and which of want it left alone (left: key → owner, see conflicts).
func compare(before, after map[string]string, left map[string]string, class string) report {
	r := report{class: class}
	for _, k := range keys {
		was, had := before[k]
		is, has := after[k]
		_, kept := left[k]
		switch {
		case kept:
			r.left = append(r.left, fmt.Sprintf("%s=%s (set by %s)", k, is, left[k]))
		case has && (!had || was != is):
			r.set = append(r.set, k+"="+is)
		case had && !has:
			r.removed = append(r.removed, k)
		}
	}
	return r
}

// changed reports whether the write changed an annotation.
func (r report) changed() bool { return len(r.set)+len(r.removed) > 0 }

// String says what was done, for the event and the log.
func (r report) String() string {
	var parts []string
	if len(r.set) > 0 {
		parts = append(parts, fmt.Sprintf("set %s from the nodeTemplate of MachineClass %s", strings.Join(r.set, ", "), r.class))
	}
	if len(r.removed) > 0 {
		parts = append(parts, "removed "+strings.Join(r.removed, ", ")+" (no nodeTemplate value for them)")
	}
	if len(r.left) > 0 {
		parts = append(parts, "left alone: "+strings.Join(r.left, ", "))
	}
	return strings.Join(parts, "; ")
}
