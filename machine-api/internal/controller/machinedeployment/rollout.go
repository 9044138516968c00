package machinedeployment

import (
	"cmp"
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// The rollout arithmetic of apps/v1 Deployments (pkg/controller/deployment), on MachineSets. The
// functions here are pure: they take the sets' numbers and return the replicas each set should
// have; the controller writes the differences.

// setState is what the arithmetic needs of one MachineSet.
type setState struct {
	name      string
	created   time.Time
	replicas  int32 // spec.replicas
	actual    int32 // status.replicas: Machines that exist and are not deleting
	available int32 // status.availableReplicas
	// maxReplicas is the deployment's replicas + maxSurge when the set was last scaled
	// (MaxReplicasAnnotation); 0 when unknown.
	maxReplicas int32
	// desired is the deployment's replicas when the set was last scaled (DesiredReplicasAnnotation);
	// -1 when unknown.
	desired int32
	// marked is how many of the set's Machines carry the delete-machine annotation and are not
	// being deleted; counted only when the deployment shrinks (see withMarks).
	marked int32
}

// fenceposts resolves a rolling update's maxSurge (a percentage of replicas rounded up) and
// maxUnavailable (rounded down) for replicas. When both come out 0 (for example 1% of 10 rounds
// down to 0 unavailable and 0 surge), maxUnavailable becomes 1 so the rollout can progress.
// Unset means maxSurge 1, maxUnavailable 0.
func fenceposts(ru *v1beta1.MachineRollingUpdateDeployment, replicas int32) (surge, unavailable int32) {
	s, u := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru != nil && ru.MaxSurge != nil {
		s = *ru.MaxSurge
	}
	if ru != nil && ru.MaxUnavailable != nil {
		u = *ru.MaxUnavailable
	}
	sv, err := intstr.GetScaledValueFromIntOrPercent(&s, int(replicas), true)
	if err != nil {
		sv = 1
	}
	uv, err := intstr.GetScaledValueFromIntOrPercent(&u, int(replicas), false)
	if err != nil {
		uv = 0
	}
	if sv == 0 && uv == 0 {
		uv = 1
	}
	return int32(sv), int32(uv)
}

// newSetTarget is the replicas of the new set for one step of a rolling update: up to replicas,
// without all sets together going above replicas + surge.
func newSetTarget(replicas, surge int32, newSet setState, all []setState) int32 {
	if newSet.replicas == replicas {
		return replicas
	}
	if newSet.replicas > replicas {
		return replicas
	}
	current := sumReplicas(all)
	maxTotal := replicas + surge
	if current >= maxTotal {
		return newSet.replicas
	}
	return newSet.replicas + min(maxTotal-current, replicas-newSet.replicas)
}

// scaleDownOld returns the replicas of the old sets (by name) for one step of a rolling update,
// counting only available Machines: first the old sets' unavailable Machines go (they give no
// capacity), then old sets shrink oldest first as long as replicas - maxUnavailable Machines stay
// available. Sets absent from the result keep their replicas.
func scaleDownOld(replicas, unavailable int32, newSet *setState, olds []setState) map[string]int32 {
	out := map[string]int32{}
	if sumReplicas(olds) == 0 {
		return out
	}
	olds = slices.Clone(olds)
	slices.SortStableFunc(olds, byCreation)
	all := olds
	var newUnavailable int32
	if newSet != nil {
		all = append(slices.Clone(olds), *newSet)
		newUnavailable = max(0, newSet.replicas-newSet.available)
	}
	minAvailable := replicas - unavailable
	maxScaledDown := sumReplicas(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return out
	}
	// Unhealthy first: the Machines of old sets that are not available.
	var cleaned int32
	for i := range olds {
		if cleaned >= maxScaledDown {
			break
		}
		o := &olds[i]
		if o.replicas == 0 || o.replicas <= o.available {
			continue
		}
		n := min(maxScaledDown-cleaned, o.replicas-o.available)
		o.replicas -= n
		cleaned += n
		out[o.name] = o.replicas
	}
	// Then available ones, while enough stay available.
	var available int32
	for _, o := range olds {
		available += o.available
	}
	if newSet != nil {
		available += newSet.available
	}
	if available <= minAvailable {
		return out
	}
	budget := available - minAvailable
	for i := range olds {
		if budget <= 0 {
			break
		}
		o := &olds[i]
		if o.replicas == 0 {
			continue
		}
		n := min(o.replicas, budget)
		o.replicas -= n
		budget -= n
		out[o.name] = o.replicas
	}
	return out
}

// activeOrLatest returns the only set with replicas, or the latest set when none has any (the
// new set if there is one), or nil when several have replicas.
func activeOrLatest(newSet *setState, olds []setState) *setState {
	var active []*setState
	for i := range olds {
		if olds[i].replicas > 0 {
			active = append(active, &olds[i])
		}
	}
	if newSet != nil && newSet.replicas > 0 {
		active = append(active, newSet)
	}
	switch {
	case len(active) == 1:
		return active[0]
	case len(active) > 1:
		return nil
	case newSet != nil:
		return newSet
	case len(olds) == 0:
		return nil
	}
	latest := &olds[0]
	for i := range olds {
		if olds[i].created.After(latest.created) {
			latest = &olds[i]
		}
	}
	return latest
}

// allowedTotal is how many Machines the sets of a deployment of replicas may hold together while
// it rolls out: replicas + surge, and none at all for a deployment scaled to zero.
func allowedTotal(replicas, surge int32) int32 {
	if replicas == 0 {
		return 0
	}
	return replicas + surge
}

// takeMarked says how many Machines each set gives up first when the deployment's sets hold
// decrease Machines too many: the Machines marked with the delete-machine annotation (marked), from
// whichever set holds them, oldest set first, never more than decrease in all nor more than a
// set's replicas. Marks decide which sets shrink, never by how much in all: the rest of the
// decrease is spread as without them.
func takeMarked(decrease int32, sets []setState) map[string]int32 {
	out := map[string]int32{}
	for _, s := range sortedByCreation(sets) {
		if decrease <= 0 {
			break
		}
		if n := min(s.marked, s.replicas, decrease); n > 0 {
			out[s.name] = n
			decrease -= n
		}
	}
	return out
}

// scaleTargets returns the replicas of the sets that have replicas (by name) after a change of the
// deployment's replicas while several sets have them: a decrease first takes the marked Machines
// from the sets that hold them (takeMarked), and what is left of it, or an increase, is spread in
// proportion (proportional). When a mark was taken every such set is in the result, so each gets
// the new size recorded and the scale is not computed again.
func scaleTargets(replicas, surge, statusReplicas int32, sets []setState) map[string]int32 {
	active := withReplicas(sets)
	taken := takeMarked(sumReplicas(active)-allowedTotal(replicas, surge), active)
	if len(taken) == 0 {
		return proportional(replicas, surge, statusReplicas, sets)
	}
	for i := range active {
		active[i].replicas -= taken[active[i].name]
	}
	out := proportional(replicas, surge, statusReplicas, active)
	for _, s := range active {
		if _, ok := out[s.name]; !ok {
			out[s.name] = s.replicas
		}
	}
	return out
}

// proportional spreads a change of the deployment's replicas over the sets that have replicas, in
// proportion to their size, as apps/v1 does: each set's share of the new total
// (replicas + surge) is its replicas scaled by new total / the total it was last scaled for
// (maxReplicas). Rounding leftovers go to the largest set (on ties, the newest when growing, the
// oldest when shrinking). The result depends only on the sets' recorded sizes, so computing it
// again after it was applied returns the same sizes: a scale is never applied twice. When the sets
// already add up to the new total, every set keeps its replicas but is still in the result, so
// that each gets the deployment's new size recorded: a set left with an earlier size (its write
// refused by a conflict, or a decrease the surge absorbed) would make every later reconcile a
// scaling event, and a rollout would never resume.
func proportional(replicas, surge, statusReplicas int32, sets []setState) map[string]int32 {
	active := withReplicas(sets)
	out := map[string]int32{}
	allowed := allowedTotal(replicas, surge)
	toAdd := allowed - sumReplicas(active)
	if toAdd == 0 {
		for _, s := range active {
			out[s.name] = s.replicas
		}
		return out
	}
	if len(active) == 0 {
		return out
	}
	slices.SortStableFunc(active, func(a, b setState) int {
		if a.replicas != b.replicas {
			return int(b.replicas - a.replicas) // larger first
		}
		if toAdd > 0 {
			return b.created.Compare(a.created) // newer first
		}
		return a.created.Compare(b.created) // older first
	})
	var added int32
	for _, s := range active {
		p := proportion(s, replicas, allowed, statusReplicas, toAdd, added)
		out[s.name] = s.replicas + p
		added += p
	}
	first := active[0].name
	out[first] = max(0, out[first]+toAdd-added)
	return out
}

// proportion is one set's share of toAdd, bounded by what is left of it.
func proportion(s setState, replicas, allowed, statusReplicas, toAdd, added int32) int32 {
	if s.replicas == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas == 0 {
		fraction = -s.replicas
	} else {
		before := s.maxReplicas
		if before == 0 {
			before = statusReplicas
		}
		if before == 0 {
			return 0
		}
		fraction = int32(math.Round(float64(s.replicas)*float64(allowed)/float64(before))) - s.replicas
	}
	left := toAdd - added
	if toAdd > 0 {
		return min(fraction, left)
	}
	return max(fraction, left)
}

// withReplicas returns the sets that have replicas, in order.
func withReplicas(sets []setState) []setState {
	var out []setState
	for _, s := range sets {
		if s.replicas > 0 {
			out = append(out, s)
		}
	}
	return out
}

func sumReplicas(sets []setState) int32 {
	var n int32
	for _, s := range sets {
		n += s.replicas
	}
	return n
}

func byCreation(a, b setState) int {
	return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.name, b.name))
}
