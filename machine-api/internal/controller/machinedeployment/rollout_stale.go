package machinedeployment

import (
	"slices"
	"time"
)

// staleState is what the arithmetic needs of the Machines of the new set that the deployment
// replaces although their template is current (spec.rollout, an edited MachineClass): how many
// there are, not deleting, and how many of them are available.
type staleState struct{ count, available int32 }

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
func nextRollingStep(replicas, surge, unavailable int32, newSet setState, stale staleState, olds []setState) rollingStep {
	fresh := newSet
	fresh.replicas = max(0, newSet.replicas-stale.count)
	fresh.actual = max(0, newSet.actual-stale.count)
	fresh.available = max(0, newSet.available-stale.available)
	withStale := olds
	if stale.count > 0 {
		withStale = append(slices.Clone(olds), setState{
			name: staleName, created: newSet.created.Add(time.Nanosecond),
			replicas: stale.count, actual: stale.count, available: stale.available, desired: -1,
		})
	}
	all := append(slices.Clone(withStale), fresh)
	if target := newSetTarget(replicas, surge, fresh, all); target != fresh.replicas {
		return rollingStep{newReplicas: target + stale.count, grow: true}
	}
	step := rollingStep{newReplicas: newSet.replicas, old: scaleDownOld(replicas, unavailable, &fresh, withStale)}
	if t, ok := step.old[staleName]; ok {
		step.removeStale = stale.count - t
		step.newReplicas -= step.removeStale
		delete(step.old, staleName)
	}
	return step
}
