package machinedeployment

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// markedForDeletion counts, per set of the deployment (by name), the Machines that carry
// v1beta1.DeleteMachineAnnotation and are not being deleted. It reads the API server, not the
// cache: the cluster-autoscaler marks a Machine just before it lowers the deployment's replicas,
// and the cache may show the new replicas before the mark. It is called only when the deployment
// shrinks.
func (r *Reconciler) markedForDeletion(ctx context.Context, s *scope) (map[string]int32, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	list := &v1beta1.MachineList{}
	if err := reader.List(ctx, list, client.InNamespace(s.md.Namespace), client.MatchingLabels{v1beta1.DeploymentNameLabel: s.md.Name}); err != nil {
		return nil, fmt.Errorf("listing the Machines of MachineDeployment %s/%s marked for deletion: %w", s.md.Namespace, s.md.Name, err)
	}
	byUID := make(map[string]string, len(s.sets))
	for _, set := range s.sets {
		byUID[string(set.UID)] = set.Name
	}
	marks := map[string]int32{}
	for i := range list.Items {
		m := &list.Items[i]
		if _, marked := m.Annotations[v1beta1.DeleteMachineAnnotation]; !marked || !m.DeletionTimestamp.IsZero() {
			continue
		}
		for _, ref := range m.OwnerReferences {
			if name, ok := byUID[string(ref.UID)]; ok && ref.Controller != nil && *ref.Controller {
				marks[name]++
			}
		}
	}
	return marks, nil
}

// withMarks returns sets with their marked counts from marks (by set name).
func withMarks(sets []setState, marks map[string]int32) []setState {
	out := make([]setState, len(sets))
	for i, s := range sets {
		s.marked = marks[s.name]
		out[i] = s
	}
	return out
}
