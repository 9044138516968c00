package machinedeployment

import (
	"strconv"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// scope is what one reconcile learned and did. Steps fill it in; computeStatus turns it into status.
type scope struct {
	md   *v1beta1.MachineDeployment // as read (metadata updated by our own patches)
	now  time.Time
	hash string // of md's template

	sets     []*v1beta1.MachineSet // owned and not deleting
	newSet   *v1beta1.MachineSet   // the set whose template hash is md's, if any
	oldSets  []*v1beta1.MachineSet // the others, oldest first
	deleting int                   // owned sets being deleted

	// The new set's Machines that the deployment replaces although their template is current (see
	// findStale), not deleting, in replacement order; why, by name; how many are available; and how
	// many of the new set's Machines are being deleted.
	stale          []*v1beta1.Machine
	staleWhy       map[string]string
	staleAvailable int32
	newDeleting    int
	// ordered is how many of stale, the first ones, the set was already told to delete (marked,
	// and out of its replicas) and has not deleted yet: a disruption budget holds them.
	ordered staleState
	// inPlacePending counts the new set's Machines to be, or being, updated in place to its
	// template (see updateInPlace): the rollout is not complete while there are any.
	inPlacePending int

	// What this reconcile did or found.
	createdSet       bool   // the new MachineSet was created
	scaled           bool   // some set's replicas changed
	waiting          string // why the rollout waits, for the Progressing message
	blocked          string // a problem the user must fix (Progressing False)
	blockedReason    string // the reason of that Progressing False (ReasonSetNameTaken when empty)
	finalizerRemoved bool
}

func (s *scope) replicas() int32 {
	if s.md.Spec.Replicas == nil {
		return 1
	}
	return *s.md.Spec.Replicas
}

// fenceposts resolves maxSurge and maxUnavailable for the strategy: the RollingUpdate values, 0
// surge and 0 unavailable for Recreate and OnDelete.
func (s *scope) fenceposts() (surge, unavailable int32) {
	if s.md.Spec.Strategy.Type == v1beta1.RecreateStrategy || s.md.Spec.Strategy.Type == v1beta1.OnDeleteStrategy {
		return 0, 0
	}
	return fenceposts(s.md.Spec.Strategy.RollingUpdate, s.replicas())
}

// byName returns the set named name among the deployment's sets, nil if none.
func (s *scope) byName(name string) *v1beta1.MachineSet {
	for _, set := range s.sets {
		if set.Name == name {
			return set
		}
	}
	return nil
}

func stateOf(set *v1beta1.MachineSet) setState {
	st := setState{
		name: set.Name, created: set.CreationTimestamp.Time,
		actual: set.Status.Replicas, available: set.Status.AvailableReplicas,
		desired: -1,
	}
	st.replicas = 1
	if set.Spec.Replicas != nil {
		st.replicas = *set.Spec.Replicas
	}
	if v, err := strconv.ParseInt(set.Annotations[MaxReplicasAnnotation], 10, 32); err == nil {
		st.maxReplicas = int32(v)
	}
	if v, err := strconv.ParseInt(set.Annotations[DesiredReplicasAnnotation], 10, 32); err == nil {
		st.desired = int32(v)
	}
	return st
}

func statesOf(sets []*v1beta1.MachineSet) []setState {
	out := make([]setState, len(sets))
	for i, s := range sets {
		out[i] = stateOf(s)
	}
	return out
}

// revision returns the revision annotation of o as a number (0 when missing or invalid).
func revision(annotations map[string]string) int64 {
	v, err := strconv.ParseInt(annotations[v1beta1.RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}
