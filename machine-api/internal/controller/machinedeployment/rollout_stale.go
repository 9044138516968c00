package machinedeployment

import (
	"slices"
	"time"
)

// staleState is what the arithmetic needs of the Machines of the new set that the deployment
// replaces although their template is current (spec.rollout, an edited MachineClass): how many
// there are, not deleting, and how many of them are available.
type staleState struct{ count, available int32 }

// pending is what the arithmetic sees of the stale Machines: those still in the new set's
// replicas. The ones whose removal was ordered already (a disruption budget holds their deletion)
// count neither in the set's replicas nor as available, as an old set's Machines do once the old
// set is scaled down.
func pending(stale, ordered staleState) staleState {
	return staleState{count: stale.count - ordered.count, available: stale.available - ordered.available}
}

// rollingStep is one step of a RollingUpdate.
type rollingStep struct {
	// newReplicas is the new set's replicas after the step, its stale Machines included.
	newReplicas int32
	// grow says the new set grows (to newReplicas) and nothing else happens in this step.
	grow bool
	// old are the old sets' replicas, by name; a set absent keeps its replicas.
	old map[string]int32
	// removeStale is how many stale Machines of the new set go in this step (newReplicas is
	// already lower by as many).
	removeStale int32
}

// staleName is the name of the stale Machines seen as a set: no MachineSet has it.
const staleName = "\x00stale"

// nextRollingStep is one step of a RollingUpdate, the apps/v1 arithmetic (newSetTarget,
// scaleDownOld) over the old sets and the new set, with the new set's stale Machines seen as one
// more old set, the newest: the new set grows within maxSurge for their replacements (the
// Machines it needs beyond its fresh ones), and they go, after the old sets' Machines, while
// maxUnavailable allows. So a scheduled or MachineClass replacement never has more Machines at
// once, or fewer available, than a template change would.
//
// ordered are the stale Machines (counted in stale) whose removal an earlier step ordered but
// that are not being deleted yet: without them, a held Machine would count twice, once out of the
// set's replicas and once as stale, and the set would grow back for it.
func nextRollingStep(replicas, surge, unavailable int32, newSet setState, stale, ordered staleState, olds []setState) rollingStep {
	left := pending(stale, ordered)
	fresh := newSet
	fresh.replicas = max(0, newSet.replicas-left.count)
	fresh.actual = max(0, newSet.actual-stale.count)
	fresh.available = max(0, newSet.available-stale.available)
	withStale := olds
	if left.count > 0 {
		withStale = append(slices.Clone(olds), setState{
			name: staleName, created: newSet.created.Add(time.Nanosecond),
			replicas: left.count, actual: left.count, available: left.available, desired: -1,
		})
	}
	all := append(slices.Clone(withStale), fresh)
	if target := newSetTarget(replicas, surge, fresh, all); target != fresh.replicas {
		return rollingStep{newReplicas: target + left.count, grow: true}
	}
	step := rollingStep{newReplicas: newSet.replicas, old: scaleDownOld(replicas, unavailable, &fresh, withStale)}
	if t, ok := step.old[staleName]; ok {
		step.removeStale = left.count - t
		step.newReplicas -= step.removeStale
		delete(step.old, staleName)
	}
	return step
}
