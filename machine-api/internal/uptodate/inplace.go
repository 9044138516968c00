package uptodate

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Annotations a MachineSet keeps on each of its Machines, to know which keys of the Machine it
// manages: a key removed from the template is removed from the Machine while what anyone else
// set is left alone.
const (
	// TemplateLabelsAnnotation lists (comma-separated, sorted) the label keys a Machine got from
	// its set's template.
	TemplateLabelsAnnotation = v1beta1.Prefix + "template-labels"
	// TemplateAnnotationsAnnotation lists the annotation keys a Machine got from its set's template.
	TemplateAnnotationsAnnotation = v1beta1.Prefix + "template-annotations"
	// TemplateHooksAnnotation lists the lifecycle hooks a Machine got from its set's template, as
	// JSON ({"preDrain":["backup"],"preTerminate":["snapshot"]}).
	TemplateHooksAnnotation = v1beta1.Prefix + "template-lifecycle-hooks"
)

// InPlaceFields are the template fields that reach existing Machines without replacing them, as
// paths from the template: the ones that tell the controllers how to treat a Machine rather than
// what to provision. They are left out of TemplateHash, copied whole from a MachineDeployment to
// its MachineSets (CopyInPlace) and from a MachineSet to its Machines (ApplyInPlace). The API
// reference lists them under MachineDeploymentSpec.template; a test keeps the three in step.
var InPlaceFields = []string{
	"metadata.labels",
	"metadata.annotations",
	"spec.metadata",
	"spec.taints",
	"spec.deletion",
	"spec.lifecycleHooks",
}

// CopyInPlace sets the in-place fields of the spec dst (a MachineSet's template) to src's (its
// deployment's template), whole. The template's own metadata is the caller's: a set adds labels of
// its own.
func CopyInPlace(dst, src *v1beta1.MachineSpec) {
	dst.Metadata = *src.Metadata.DeepCopy()
	dst.Taints = slices.Clone(src.Taints)
	dst.Deletion = src.Deletion.DeepCopy()
	dst.LifecycleHooks = *src.LifecycleHooks.DeepCopy()
}

// withoutInPlace returns spec without its in-place fields and its providerID (which the provider
// sets on each Machine): what needs a new Machine when it changes.
func withoutInPlace(spec *v1beta1.MachineSpec) *v1beta1.MachineSpec {
	out := spec.DeepCopy()
	out.Metadata = v1beta1.ObjectMeta{}
	out.Taints = nil
	out.Deletion = nil
	out.LifecycleHooks = v1beta1.LifecycleHooks{}
	out.ProviderID = ""
	return out
}

// outsideInPlace is withoutInPlace as a shallow copy, for comparing: it shares spec's maps,
// slices and pointers, so it must not be modified.
func outsideInPlace(spec *v1beta1.MachineSpec) v1beta1.MachineSpec {
	out := *spec
	out.Metadata = v1beta1.ObjectMeta{}
	out.Taints = nil
	out.Deletion = nil
	out.LifecycleHooks = v1beta1.LifecycleHooks{}
	out.ProviderID = ""
	return out
}

// ApplyInPlace brings a Machine's in-place fields in line with the template t of its set, in place,
// and reports whether anything changed:
//   - labels and annotations of t.metadata: set to the template's values; a key the Machine got
//     from an earlier template (listed in TemplateLabelsAnnotation / TemplateAnnotationsAnnotation)
//     and no longer in the template is removed; other keys are left alone;
//   - spec.metadata, spec.taints and spec.deletion: set to the template's, whole;
//   - spec.lifecycleHooks: the template's hooks are set (by name); a hook the Machine got from an
//     earlier template (TemplateHooksAnnotation) and no longer in it is removed; hooks others
//     added are left alone.
//
// A Machine being deleted gets spec.deletion only, so that a new timeout applies to a deletion in
// progress: hooks cannot be added to it, and the rest no longer matters. The rest of the spec is
// never changed: a Machine keeps the template it was created from. ApplyInPlace replaces, never
// mutates, the maps and slices it changes, so m may be a shallow copy.
func ApplyInPlace(t *v1beta1.MachineTemplateSpec, m *v1beta1.Machine) bool {
	if !m.DeletionTimestamp.IsZero() {
		before := m.Spec.Deletion
		m.Spec.Deletion = t.Spec.Deletion.DeepCopy()
		return !equality.Semantic.DeepEqual(before, m.Spec.Deletion)
	}
	// Nothing below mutates m's maps and slices (they are replaced by changed copies), so the
	// values before need no copy, and only the fields set here can differ.
	beforeLabels, beforeAnnotations := m.Labels, m.Annotations
	beforeSpec := m.Spec
	m.Labels = syncKeys(maps.Clone(m.Labels), t.Metadata.Labels, keysOf(m.Annotations, TemplateLabelsAnnotation))
	ann := withoutKeys(t.Metadata.Annotations, TemplateLabelsAnnotation, TemplateAnnotationsAnnotation, TemplateHooksAnnotation)
	m.Annotations = syncKeys(maps.Clone(m.Annotations), ann, keysOf(m.Annotations, TemplateAnnotationsAnnotation))
	m.Annotations = setKeyList(m.Annotations, TemplateLabelsAnnotation, t.Metadata.Labels)
	m.Annotations = setKeyList(m.Annotations, TemplateAnnotationsAnnotation, ann)
	m.Spec.Metadata = *t.Spec.Metadata.DeepCopy()
	m.Spec.Taints = slices.Clone(t.Spec.Taints)
	m.Spec.Deletion = t.Spec.Deletion.DeepCopy()
	previous := hooksOf(m.Annotations)
	m.Spec.LifecycleHooks = v1beta1.LifecycleHooks{
		PreDrain:     syncHooks(m.Spec.LifecycleHooks.PreDrain, t.Spec.LifecycleHooks.PreDrain, previous.PreDrain),
		PreTerminate: syncHooks(m.Spec.LifecycleHooks.PreTerminate, t.Spec.LifecycleHooks.PreTerminate, previous.PreTerminate),
	}
	m.Annotations = setHookList(m.Annotations, t.Spec.LifecycleHooks)
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	return !equality.Semantic.DeepEqual(beforeLabels, m.Labels) ||
		!equality.Semantic.DeepEqual(beforeAnnotations, m.Annotations) ||
		!equality.Semantic.DeepEqual(beforeSpec.Metadata, m.Spec.Metadata) ||
		!equality.Semantic.DeepEqual(beforeSpec.Taints, m.Spec.Taints) ||
		!equality.Semantic.DeepEqual(beforeSpec.Deletion, m.Spec.Deletion) ||
		!equality.Semantic.DeepEqual(beforeSpec.LifecycleHooks, m.Spec.LifecycleHooks)
}

// syncKeys sets every key of want in have, and removes the keys of previous no longer in want.
func syncKeys(have, want map[string]string, previous []string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for _, k := range previous {
		if _, ok := want[k]; !ok {
			delete(have, k)
		}
	}
	maps.Copy(have, want)
	return have
}

// keysOf parses the comma-separated key list in annotation key of ann.
func keysOf(ann map[string]string, key string) []string {
	v := ann[key]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// setKeyList records the keys of m, sorted, in annotation key of ann (removing it when m is empty).
func setKeyList(ann map[string]string, key string, m map[string]string) map[string]string {
	if len(m) == 0 {
		delete(ann, key)
		return ann
	}
	ann[key] = strings.Join(slices.Sorted(maps.Keys(m)), ",")
	return ann
}

func withoutKeys(m map[string]string, keys ...string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// hookNames are the names of the hooks a Machine got from its template, per stage.
type hookNames struct {
	PreDrain     []string `json:"preDrain,omitempty"`
	PreTerminate []string `json:"preTerminate,omitempty"`
}

// hooksOf reads TemplateHooksAnnotation; an unreadable value counts as no hooks (none is removed).
func hooksOf(ann map[string]string) hookNames {
	var h hookNames
	if v := ann[TemplateHooksAnnotation]; v != "" {
		_ = json.Unmarshal([]byte(v), &h)
	}
	return h
}

// setHookList records the names of the template's hooks in TemplateHooksAnnotation (removing it
// when there are none).
func setHookList(ann map[string]string, hooks v1beta1.LifecycleHooks) map[string]string {
	names := hookNames{}
	for _, h := range hooks.PreDrain {
		names.PreDrain = append(names.PreDrain, h.Name)
	}
	for _, h := range hooks.PreTerminate {
		names.PreTerminate = append(names.PreTerminate, h.Name)
	}
	if len(names.PreDrain)+len(names.PreTerminate) == 0 {
		delete(ann, TemplateHooksAnnotation)
		return ann
	}
	if ann == nil {
		ann = map[string]string{}
	}
	v, _ := json.Marshal(names) // a struct of string slices always marshals
	ann[TemplateHooksAnnotation] = string(v)
	return ann
}

// syncHooks returns have with every hook of want set (by name, in want's order after the hooks
// that stay), the hooks named in previous and no longer in want removed, and the others kept.
func syncHooks(have, want []v1beta1.LifecycleHook, previous []string) []v1beta1.LifecycleHook {
	wanted := map[string]bool{}
	for _, h := range want {
		wanted[h.Name] = true
	}
	var out []v1beta1.LifecycleHook
	for _, h := range have {
		if wanted[h.Name] || slices.Contains(previous, h.Name) {
			continue
		}
		out = append(out, h)
	}
	out = append(out, want...)
	if len(out) == 0 {
		return nil
	}
	// Keep the Machine's order when the set of hooks is the same, so that nothing is written.
	if sameHooks(have, out) {
		return have
	}
	return out
}

func sameHooks(a, b []v1beta1.LifecycleHook) bool {
	if len(a) != len(b) {
		return false
	}
	byName := make(map[string]v1beta1.LifecycleHook, len(a))
	for _, h := range a {
		byName[h.Name] = h
	}
	for _, h := range b {
		if o, ok := byName[h.Name]; !ok || o != h {
			return false
		}
	}
	return true
}
