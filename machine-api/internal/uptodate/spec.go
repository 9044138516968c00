package uptodate

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// SpecHash is TemplateHash of a Machine's spec: a Machine whose fields that need a new Machine are
// its set's template's has its set's hash.
func SpecHash(spec *v1beta1.MachineSpec) string {
	return TemplateHash(&v1beta1.MachineTemplateSpec{Spec: *spec})
}

// ApplySpec gives m the fields of template t that need a new Machine unless its provider updates
// it in place (every field but the in-place ones and providerID), keeping the rest of m, and
// reports whether anything changed. A MachineSet calls it for a Machine whose provider's plan
// (status.inPlaceUpdate) covers t; the machine controller then updates the instance.
func ApplySpec(t *v1beta1.MachineTemplateSpec, m *v1beta1.Machine) bool {
	before := m.Spec
	next := *withoutInPlace(&t.Spec)
	next.Metadata, next.Taints, next.Deletion, next.LifecycleHooks = before.Metadata, before.Taints, before.Deletion, before.LifecycleHooks
	next.ProviderID = before.ProviderID
	m.Spec = next
	return !equality.Semantic.DeepEqual(&before, &m.Spec)
}

// SpecChanges lists the fields outside the in-place ones in which want differs from have, by
// path (spec.providerSpec.value.instanceType), with both values.
func SpecChanges(have, want *v1beta1.MachineSpec) []Change {
	a, b := outsideInPlace(have), outsideInPlace(want)
	if equality.Semantic.DeepEqual(&a, &b) {
		return nil
	}
	return diff("spec", canonical(&a), canonical(&b))
}

// Uncovered returns the paths of changes that no path of covered equals or contains (a covered
// path spec.providerSpec.value.tags contains spec.providerSpec.value.tags.team).
func Uncovered(changes []Change, covered []string) []string {
	var out []string
	for _, c := range changes {
		ok := false
		for _, p := range covered {
			if c.Path == p || strings.HasPrefix(c.Path, p+".") || strings.HasPrefix(c.Path, p+"[") {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, c.Path)
		}
	}
	return out
}
