package machineset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// ownLabels are the labels the set puts on each of its Machines besides the template's: its name,
// and its deployment's name when it has one.
func ownLabels(set *v1beta1.MachineSet) map[string]string {
	l := map[string]string{v1beta1.SetNameLabel: set.Name}
	if d, ok := set.Labels[v1beta1.DeploymentNameLabel]; ok {
		l[v1beta1.DeploymentNameLabel] = d
	}
	return l
}

// applyTemplate brings m's template-managed metadata in line with the set's template, in place,
// and reports whether anything changed. It manages:
//   - the labels and annotations of template.metadata: set to the template's values; a key the
//     Machine got from an earlier template (listed in TemplateLabelsAnnotation /
//     TemplateAnnotationsAnnotation) and no longer in the template is removed; other keys are left
//     alone;
//   - the set-name (and deployment-name) labels;
//   - spec.metadata and spec.taints, which the node linker carries to the Node: set to the
//     template's, since a set's Machines get their Node metadata from the set.
//
// The rest of the spec is never changed: a Machine keeps the template it was created from.
func applyTemplate(set *v1beta1.MachineSet, m *v1beta1.Machine) bool {
	beforeLabels, beforeAnnotations := maps.Clone(m.Labels), maps.Clone(m.Annotations)
	beforeMeta, beforeTaints := m.Spec.Metadata, m.Spec.Taints
	tmpl := &set.Spec.Template
	m.Labels = syncKeys(maps.Clone(m.Labels), tmpl.Metadata.Labels, keysOf(m.Annotations, TemplateLabelsAnnotation))
	maps.Copy(m.Labels, ownLabels(set))
	ann := withoutKeys(tmpl.Metadata.Annotations, TemplateLabelsAnnotation, TemplateAnnotationsAnnotation)
	m.Annotations = syncKeys(maps.Clone(m.Annotations), ann, keysOf(m.Annotations, TemplateAnnotationsAnnotation))
	m.Annotations = setKeyList(m.Annotations, TemplateLabelsAnnotation, tmpl.Metadata.Labels)
	m.Annotations = setKeyList(m.Annotations, TemplateAnnotationsAnnotation, ann)
	m.Spec.Metadata = *tmpl.Spec.Metadata.DeepCopy()
	m.Spec.Taints = slices.Clone(tmpl.Spec.Taints)
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	return !equality.Semantic.DeepEqual(beforeLabels, m.Labels) ||
		!equality.Semantic.DeepEqual(beforeAnnotations, m.Annotations) ||
		!equality.Semantic.DeepEqual(beforeMeta, m.Spec.Metadata) ||
		!equality.Semantic.DeepEqual(beforeTaints, m.Spec.Taints)
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

// syncMetadata propagates the template's metadata (labels, annotations, spec.metadata,
// spec.taints) to the set's Machines in place, one merge patch per Machine that differs. Machines
// being deleted are left alone.
func (r *Reconciler) syncMetadata(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	var stale []*v1beta1.Machine
	var patched []*v1beta1.Machine
	for _, m := range s.active() {
		updated := *m // applyTemplate replaces, never mutates, the maps and slices it changes
		if applyTemplate(s.set, &updated) {
			stale = append(stale, m)
			patched = append(patched, &updated)
		}
	}
	if len(stale) == 0 {
		return reconcile.Result{}, true, nil
	}
	errs := parallel(len(stale), func(i int) error {
		err := r.Client.Patch(ctx, patched[i], client.MergeFrom(stale[i]))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating the labels, annotations, node metadata and taints of machine %s from its set's template: %w", stale[i].Name, err)
		}
		*stale[i] = *patched[i] // later steps see what is now stored
		return nil
	})
	names := make([]string, 0, len(stale))
	for _, m := range stale {
		names = append(names, m.Name)
	}
	r.Recorder.Eventf(s.set, nil, "Normal", EventMetadataUpdated, "UpdateMetadata",
		"updated the metadata of %d Machines from the template in place: %s", len(stale), preview(names))
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, false, err
	}
	return reconcile.Result{}, true, nil
}
