package machineset

import (
	"context"
	"errors"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
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

// applyTemplate brings m's in-place fields in line with the set's template (uptodate.ApplyInPlace:
// the template's labels and annotations, spec.metadata, spec.taints, spec.deletion and
// spec.lifecycleHooks; only spec.deletion on a Machine being deleted), adds the set's own labels,
// and reports whether anything changed. The rest of the spec is never changed: a Machine keeps the
// template it was created from.
func applyTemplate(set *v1beta1.MachineSet, m *v1beta1.Machine) bool {
	changed := uptodate.ApplyInPlace(&set.Spec.Template, m)
	if !m.DeletionTimestamp.IsZero() {
		return changed
	}
	labels := maps.Clone(m.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	own := ownLabels(set)
	for k, v := range own {
		if labels[k] != v {
			changed = true
		}
	}
	maps.Copy(labels, own)
	m.Labels = labels
	return changed
}

// templateKey is everything applyTemplate reads of the set: its identity, its template (the
// generation moves with every spec change) and its deployment-name label.
func templateKey(set *v1beta1.MachineSet) string {
	return fmt.Sprintf("%s/%d/%s", set.UID, set.Generation, set.Labels[v1beta1.DeploymentNameLabel])
}

// syncMetadata propagates the template's in-place fields to the set's Machines (see applyTemplate),
// one merge patch per Machine that differs. Machines being deleted get spec.deletion only, so that
// a new timeout applies to their deletion in progress. A Machine found in line by an earlier
// reconcile, at the same resourceVersion and under the same template, is not compared again
// (uptodate.Checked): a scale-up of thousands reconciles the set many times.
func (r *Reconciler) syncMetadata(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	var stale []*v1beta1.Machine
	var patched []*v1beta1.Machine
	// A Machine found in line before, unchanged since, under the same template, is in line.
	pass := r.inLine.Pass(client.ObjectKeyFromObject(s.set), templateKey(s.set))
	for _, m := range s.machines {
		if pass.InLine(m) {
			continue
		}
		updated := *m // applyTemplate replaces, never mutates, the maps and slices it changes
		if !applyTemplate(s.set, &updated) {
			pass.Found(m)
			continue
		}
		stale = append(stale, m)
		// A copy of its own: the answer to the patch is decoded into it, and m shares its maps
		// and slices with the cache.
		patched = append(patched, updated.DeepCopy())
	}
	pass.Done()
	if len(stale) == 0 {
		return reconcile.Result{}, true, nil
	}
	errs := parallel(len(stale), func(i int) error {
		err := r.Client.Patch(ctx, patched[i], client.MergeFrom(stale[i]))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating the in-place fields of machine %s from its set's template: %w", stale[i].Name, err)
		}
		*stale[i] = *patched[i] // later steps see what is now stored
		return nil
	})
	names := make([]string, 0, len(stale))
	for _, m := range stale {
		names = append(names, m.Name)
	}
	r.Recorder.Eventf(s.set, nil, "Normal", EventMetadataUpdated, "UpdateMetadata",
		"updated %d Machines from the template in place (labels, annotations, node metadata, taints, deletion settings, lifecycle hooks): %s", len(stale), preview(names))
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, false, err
	}
	return reconcile.Result{}, true, nil
}
