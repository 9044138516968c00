package machineset

import (
	"cmp"
	"hash/fnv"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Deletion priority classes, most urgent first. A Machine falls in the first class that applies.
const (
	classDeleting  = iota // already being deleted
	classAnnotated        // carries v1beta1.DeleteMachineAnnotation
	classUnhealthy        // Failed, no Node, NodeLinked False or HealthCheckSucceeded False
	classHealthy          // everything else, ordered by the delete policy
	classProtected        // carries v1beta1.DoNotDisruptAnnotation: the last to choose (disruption.go)
)

// deletionClass returns the priority class of m.
func deletionClass(m *v1beta1.Machine) int {
	switch {
	case !m.DeletionTimestamp.IsZero():
		return classDeleting
	case hasKey(m.Annotations, v1beta1.DeleteMachineAnnotation):
		return classAnnotated
	case markedDoNotDisrupt(m):
		return classProtected
	case unhealthy(m):
		return classUnhealthy
	default:
		return classHealthy
	}
}

// unhealthy reports whether m is a better candidate for removal than a working Machine: it
// failed, it has no Node yet (or lost it), the node linker says it is not linked, or its health
// check failed it.
func unhealthy(m *v1beta1.Machine) bool {
	return m.Status.Phase == v1beta1.MachinePhaseFailed ||
		m.Status.NodeRef == nil ||
		meta.IsStatusConditionFalse(m.Status.Conditions, v1beta1.NodeLinkedCondition) ||
		meta.IsStatusConditionFalse(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition)
}

// sortForDeletion orders machines in place, the first to delete first: by priority class, then
// within a class by policy (Random: a stable hash of the UID; Newest: latest creation first;
// Oldest: earliest creation first), and ties by name. The order depends only on the machines, so
// every reconcile (and every replica of the controller) agrees on it.
func sortForDeletion(machines []*v1beta1.Machine, policy v1beta1.DeletePolicy) {
	slices.SortStableFunc(machines, func(a, b *v1beta1.Machine) int {
		return cmp.Or(deletionClass(a)-deletionClass(b), comparePolicy(a, b, policy), cmp.Compare(a.Name, b.Name))
	})
}

// comparePolicy orders two Machines of the same class by the delete policy; 0 is a tie.
func comparePolicy(a, b *v1beta1.Machine, policy v1beta1.DeletePolicy) int {
	switch policy {
	case v1beta1.NewestDeletePolicy:
		return compareTime(b.CreationTimestamp, a.CreationTimestamp)
	case v1beta1.OldestDeletePolicy:
		return compareTime(a.CreationTimestamp, b.CreationTimestamp)
	default: // Random, and unset
		ha, hb := uidHash(a), uidHash(b)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return 0
	}
}

func compareTime(a, b metav1.Time) int {
	return a.Time.Compare(b.Time)
}

func uidHash(m *v1beta1.Machine) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(m.UID))
	return h.Sum64()
}

// pickForDeletion returns the n Machines to delete from active (none of them deleting), in order.
// It never returns more than n, however many tie.
func pickForDeletion(active []*v1beta1.Machine, n int, policy v1beta1.DeletePolicy) []*v1beta1.Machine {
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(active)
	sortForDeletion(sorted, policy)
	return sorted[:min(n, len(sorted))]
}

// withMarks returns active (from the cache) with the marks of each Machine as fresh (read from the
// API server) has them: the delete-machine mark (the cluster-autoscaler marks the Machine it wants
// removed just before it lowers the replicas, and the cache may show the new replicas before the
// mark) and the do-not-disrupt annotation (put on just before a scale-down, it must hold that
// scale-down). A mark only the cache shows is kept (fresh has no newer word on a Machine it does
// not list, and keeping a do-not-disrupt deletes nothing). active is not modified: a Machine whose
// marks change is a copy.
func withMarks(active []*v1beta1.Machine, fresh []v1beta1.Machine) []*v1beta1.Machine {
	byUID := make(map[types.UID]*v1beta1.Machine, len(fresh))
	for i := range fresh {
		byUID[fresh[i].UID] = &fresh[i]
	}
	out := slices.Clone(active)
	for i, m := range out {
		f := byUID[m.UID]
		if f == nil {
			continue
		}
		for _, key := range []string{v1beta1.DeleteMachineAnnotation, v1beta1.DoNotDisruptAnnotation} {
			v, ok := f.Annotations[key]
			if cur, has := out[i].Annotations[key]; !ok || (has && cur == v) {
				continue
			}
			if out[i] == m {
				out[i] = m.DeepCopy()
			}
			if out[i].Annotations == nil {
				out[i].Annotations = map[string]string{}
			}
			out[i].Annotations[key] = v
		}
	}
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
