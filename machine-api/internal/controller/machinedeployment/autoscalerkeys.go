package machinedeployment

import (
	"context"
	"fmt"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// withAutoscalerKeys puts the cluster-autoscaler's Cluster API keys on set, in place: the
// deployment-name label (v1beta1.ClusterAPIDeploymentNameLabel, the deployment's name) and the
// revision annotation (v1beta1.ClusterAPIRevisionAnnotation, the set's own revision, removed
// while it has none). The autoscaler finds a deployment's sets by the label and tells the newest
// from the old ones by the annotation; a set carrying the label without the annotation would count
// as old forever, so the two always go together. It reports whether anything changed.
func withAutoscalerKeys(md *v1beta1.MachineDeployment, set *v1beta1.MachineSet) bool {
	changed := false
	if set.Labels[v1beta1.ClusterAPIDeploymentNameLabel] != md.Name {
		set.Labels = maps.Clone(set.Labels)
		if set.Labels == nil {
			set.Labels = map[string]string{}
		}
		set.Labels[v1beta1.ClusterAPIDeploymentNameLabel] = md.Name
		changed = true
	}
	rev, hasRev := set.Annotations[v1beta1.RevisionAnnotation]
	if capi, ok := set.Annotations[v1beta1.ClusterAPIRevisionAnnotation]; ok != hasRev || capi != rev {
		set.Annotations = maps.Clone(set.Annotations)
		if hasRev {
			set.Annotations[v1beta1.ClusterAPIRevisionAnnotation] = rev
		} else {
			delete(set.Annotations, v1beta1.ClusterAPIRevisionAnnotation)
		}
		changed = true
	}
	return changed
}

// syncAutoscalerKeys keeps the autoscaler's keys (withAutoscalerKeys) on every set of the
// deployment, paused or not: the autoscaler's rollout guard matters most while a rollout is
// paused half-way. Sets created by this controller carry them from the start; this step adds
// them to sets made before, and repairs them when someone changed them.
func (r *Reconciler) syncAutoscalerKeys(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	for _, set := range s.sets {
		changed := set.DeepCopy()
		if !withAutoscalerKeys(s.md, changed) {
			continue
		}
		if err := r.patchSet(ctx, set, changed); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("writing the cluster-autoscaler's deployment-name label and revision annotation on MachineSet %s: %w", set.Name, err)
		}
	}
	return reconcile.Result{}, true, nil
}
