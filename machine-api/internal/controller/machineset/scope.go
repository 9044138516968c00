package machineset

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// scope is what one reconcile learned and did. Steps fill it in; computeStatus turns it into
// status.
type scope struct {
	set      *v1beta1.MachineSet // as read (metadata updated by our own patches)
	selector labels.Selector
	now      time.Time

	// machines are the set's Machines after adoption and release, deleting ones included.
	machines []*v1beta1.Machine
	// owner describes the MachineDeployment controlling the set, if any.
	owner *ownerInfo
	// lineages are the Machines the set replaces (see lineage.go).
	lineages *lineages
	// launches are the Machines that did not reach Running in time (see launch.go).
	launches *launches
	// interruptionWait is how long until an interrupted Machine must go even though its
	// replacement is not Running (0: none waits; see interruption.go).
	interruptionWait time.Duration

	// What this reconcile did.
	acted            bool     // the scale step ran: status.observedGeneration may advance
	frozen           bool     // more Machines than replicas + surge: creating is stopped
	created          int      // Machines created
	createErr        error    // the first create failure
	deleted          []string // Machines whose deletion was requested
	deleteErr        error
	updated          []string      // Machines given their template's spec for a disruptive in-place update
	held             []heldMachine // Machines the pool's disruption budgets kept from deletion
	finalizerRemoved bool
}

// ownerInfo is what a set needs to know about the MachineDeployment controlling it.
type ownerInfo struct {
	name string
	uid  types.UID
	// surge is how many Machines above replicas the deployment allows (its resolved maxSurge for
	// RollingUpdate, else 0).
	surge int32
	// holdCreates, when set, says why the set must not replace Machines (an old set of an OnDelete
	// rollout: its deleted Machines are replaced by the current set).
	holdCreates string
	// inPlace is the deployment's spec.rollout.inPlace (InPlaceNever for OnDelete, which
	// replaces only what users delete).
	inPlace v1beta1.InPlacePolicy
	// maxUnavailable bounds the set's Machines updating disruptively in place or unavailable:
	// the deployment's resolved maxUnavailable, at least 1 (RollingUpdate), -1 for no bound
	// (Recreate).
	maxUnavailable int32
}

// surge is the overshoot tolerance of the set: its deployment's maxSurge, 0 for a standalone set.
func (s *scope) surge() int32 {
	if s.owner == nil {
		return 0
	}
	return s.owner.surge
}

// active returns the Machines that count toward replicas: not deleting, not to be replaced (a
// health check asked the set to, see lineage.go, or they did not launch in time, see launch.go),
// and not deleted by this reconcile.
func (s *scope) active() []*v1beta1.Machine {
	gone := make(map[string]bool, len(s.deleted))
	for _, n := range s.deleted {
		gone[n] = true
	}
	out := make([]*v1beta1.Machine, 0, len(s.machines))
	for _, m := range s.machines {
		if m.DeletionTimestamp.IsZero() && !gone[m.Name] && !s.toReplace(m) {
			out = append(out, m)
		}
	}
	return out
}

// deleting returns the names of the set's Machines that are being deleted.
func (s *scope) deleting() []string {
	var out []string
	for _, m := range s.machines {
		if !m.DeletionTimestamp.IsZero() {
			out = append(out, m.Name)
		}
	}
	return append(out, s.deleted...)
}

func replicasOf(set *v1beta1.MachineSet) int32 {
	if set.Spec.Replicas == nil {
		return 1
	}
	return *set.Spec.Replicas
}
