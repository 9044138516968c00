package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// waitForSets holds the rollout until every set's status describes its current spec
// (status.observedGeneration): the arithmetic counts available Machines from the sets' status, and
// a stale count could take away more than maxUnavailable allows. (That the cache shows this
// process's earlier writes to the sets the consistency guard ensured before the reconcile ran.)
func (r *Reconciler) waitForSets(_ context.Context, s *scope) (reconcile.Result, bool, error) {
	for _, set := range s.sets {
		if set.Status.ObservedGeneration < set.Generation {
			// The set's status update brings the deployment back.
			s.waiting = fmt.Sprintf("waiting for MachineSet %s to act on its spec (generation %d)", set.Name, set.Generation)
			return reconcile.Result{}, false, nil
		}
	}
	return reconcile.Result{}, true, nil
}

// rollout moves the sets one step towards the deployment's spec. A paused deployment, and a
// change of a RollingUpdate deployment's replicas, only scale (proportionally when several sets
// have replicas); otherwise the strategy decides.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	strategy := s.md.Spec.Strategy.Type
	switch {
	case s.md.Spec.Paused:
		return reconcile.Result{}, true, r.scale(ctx, s)
	case strategy == v1beta1.RecreateStrategy:
		return r.recreate(ctx, s)
	case strategy == v1beta1.OnDeleteStrategy:
		return r.onDelete(ctx, s)
	case isScalingEvent(s):
		return reconcile.Result{}, true, r.scale(ctx, s)
	default:
		return r.rolling(ctx, s)
	}
}

// isScalingEvent reports whether the deployment's replicas changed since a set with replicas was
// last scaled for it.
func isScalingEvent(s *scope) bool {
	for _, set := range s.sets {
		st := stateOf(set)
		if st.replicas > 0 && st.desired >= 0 && st.desired != s.replicas() {
			return true
		}
	}
	return false
}

// scale applies a change of the deployment's replicas: to the only set with replicas (or the
// latest one); by scaling old sets to 0 when the new one is saturated; else proportionally, a
// decrease taking the Machines marked with the delete-machine annotation first, from whichever
// set holds them (scaleTargets).
func (r *Reconciler) scale(ctx context.Context, s *scope) error {
	var newState *setState
	if s.newSet != nil {
		st := stateOf(s.newSet)
		newState = &st
	}
	olds := statesOf(s.oldSets)
	if only := activeOrLatest(newState, olds); only != nil {
		return r.scaleSet(ctx, s, s.byName(only.name), s.replicas())
	}
	if s.newSet != nil && saturated(s) {
		var errs []error
		for _, o := range s.oldSets {
			errs = append(errs, r.scaleSet(ctx, s, o, 0))
		}
		return errors.Join(errs...)
	}
	if s.md.Spec.Strategy.Type == v1beta1.RecreateStrategy {
		return nil // Recreate brings the old sets to 0 anyway
	}
	surge, _ := s.fenceposts()
	states := statesOf(s.sets)
	if sumReplicas(states) > allowedTotal(s.replicas(), surge) {
		marks, err := r.markedForDeletion(ctx, s)
		if err != nil {
			return err
		}
		states = withMarks(states, marks)
	}
	targets := scaleTargets(s.replicas(), surge, s.md.Status.Replicas, states)
	var errs []error
	for _, set := range s.sets {
		if t, ok := targets[set.Name]; ok {
			errs = append(errs, r.scaleSet(ctx, s, set, t))
		}
	}
	return errors.Join(errs...)
}

// saturated reports whether the new set alone provides every replica, all available.
func saturated(s *scope) bool {
	st := stateOf(s.newSet)
	return st.replicas == s.replicas() && st.desired == s.replicas() && st.available == s.replicas()
}

// rolling is one step of a RollingUpdate: create or grow the new set within maxSurge, else shrink
// the old ones, and remove the new set's stale Machines (see findStale), within maxUnavailable.
func (r *Reconciler) rolling(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	surge, unavailable := s.fenceposts()
	if s.newSet == nil {
		res, err := r.createNewSet(ctx, s, newSetTarget(s.replicas(), surge, setState{}, statesOf(s.sets)))
		return res, false, err
	}
	stale := staleState{count: int32(len(s.stale)), available: s.staleAvailable}
	step := nextRollingStep(s.replicas(), surge, unavailable, stateOf(s.newSet), stale, s.ordered, statesOf(s.oldSets))
	if step.grow {
		if stale.count > 0 {
			s.waiting = "creating replacements: " + staleMessage(s)
		}
		return reconcile.Result{}, false, r.scaleSet(ctx, s, s.newSet, step.newReplicas)
	}
	var errs []error
	for _, o := range s.oldSets {
		if t, ok := step.old[o.Name]; ok {
			errs = append(errs, r.scaleSet(ctx, s, o, t))
		}
	}
	if step.removeStale > 0 {
		if _, err := r.replaceStale(ctx, s, s.stale[s.ordered.count:], step.removeStale, step.newReplicas); err != nil {
			errs = append(errs, err)
		}
	}
	if len(step.old) == 0 && step.removeStale == 0 && !complete(s) {
		s.waiting = fmt.Sprintf("waiting for Machines of MachineSet %s to become available (maxUnavailable %d, maxSurge %d)", s.newSet.Name, unavailable, surge)
		if stale.count > 0 {
			s.waiting += "; " + staleMessage(s)
		}
	}
	return reconcile.Result{}, true, errors.Join(errs...)
}

// recreate scales the old sets to 0, waits until their Machines are gone, then creates or scales
// the new set to replicas. Stale Machines of the new set (see findStale) go the same way: all of
// them are removed, and the set grows back once they are gone.
func (r *Reconciler) recreate(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	var errs []error
	for _, o := range s.oldSets {
		errs = append(errs, r.scaleSet(ctx, s, o, 0))
	}
	if err := errors.Join(errs...); err != nil || s.scaled {
		return reconcile.Result{}, false, err
	}
	for _, o := range s.oldSets {
		if o.Status.Replicas > 0 || meta.IsStatusConditionTrue(o.Status.Conditions, v1beta1.ScalingDownCondition) {
			s.waiting = fmt.Sprintf("waiting for the Machines of old MachineSet %s to be deleted before creating new ones", o.Name)
			return reconcile.Result{}, false, nil
		}
	}
	if s.newSet == nil {
		res, err := r.createNewSet(ctx, s, s.replicas())
		return res, false, err
	}
	if n := int32(len(s.stale)); n > 0 {
		_, err := r.replaceStale(ctx, s, s.stale, n, max(0, s.replicas()-n))
		if s.waiting == "" {
			s.waiting = "removing before replacing them: " + staleMessage(s)
		}
		return reconcile.Result{}, false, err
	}
	if s.newDeleting > 0 && ptr.Deref(s.newSet.Spec.Replicas, 1) < s.replicas() {
		s.waiting = fmt.Sprintf("waiting for the replaced Machines of MachineSet %s to be deleted before creating new ones", s.newSet.Name)
		return reconcile.Result{}, false, nil
	}
	return reconcile.Result{}, true, r.scaleSet(ctx, s, s.newSet, s.replicas())
}

// onDelete never deletes an old Machine itself: each old set keeps the Machines it has (its
// replicas drop to the Machines that remain after a user deletes one, and it does not replace
// them), and the new set gets the rest of the deployment's replicas. A scale-down takes the
// Machines marked with the delete-machine annotation first, from whichever set holds them, then
// from the old sets, oldest first.
func (r *Reconciler) onDelete(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	olds := statesOf(s.oldSets)
	var newState *setState
	if s.newSet != nil {
		st := stateOf(s.newSet)
		newState = &st
	}
	if onDeleteHeld(olds, newState) > s.replicas() {
		marks, err := r.markedForDeletion(ctx, s)
		if err != nil {
			return reconcile.Result{}, false, err
		}
		olds = withMarks(olds, marks)
		if newState != nil {
			newState.marked = marks[newState.name]
		}
	}
	targets, newTarget := onDeleteTargets(s.replicas(), olds, newState)
	if s.newSet == nil {
		res, err := r.createNewSet(ctx, s, newTarget)
		if err != nil || s.blocked != "" {
			return res, false, err
		}
	}
	var errs []error
	for _, o := range s.oldSets {
		errs = append(errs, r.scaleSet(ctx, s, o, targets[o.Name]))
	}
	if s.newSet != nil {
		errs = append(errs, r.scaleSet(ctx, s, s.newSet, newTarget))
	}
	return reconcile.Result{}, true, errors.Join(errs...)
}

// onDeleteTargets returns the old sets' replicas and the new set's (newSet nil when there is
// none yet). Each old set keeps at most the Machines it has; when they and the new set hold more
// than replicas, the sets holding Machines marked with the delete-machine annotation give those
// up first (takeMarked), then the oldest old sets shrink, and the new set gets what is left.
func onDeleteTargets(replicas int32, olds []setState, newSet *setState) (map[string]int32, int32) {
	targets := map[string]int32{}
	var sum int32
	kept := make([]setState, 0, len(olds)+1)
	for _, o := range olds {
		o.replicas = min(o.replicas, o.actual)
		targets[o.name] = o.replicas
		sum += o.replicas
		kept = append(kept, o)
	}
	if newSet != nil {
		kept = append(kept, *newSet)
	}
	for name, n := range takeMarked(onDeleteHeld(olds, newSet)-replicas, kept) {
		if _, old := targets[name]; old {
			targets[name] -= n
			sum -= n
		}
	}
	excess := sum - replicas
	for _, o := range sortedByCreation(olds) {
		if excess <= 0 {
			break
		}
		cut := min(targets[o.name], excess)
		targets[o.name] -= cut
		excess -= cut
		sum -= cut
	}
	return targets, max(0, replicas-sum)
}

// onDeleteHeld is how many Machines the sets of an OnDelete deployment hold: each old set at most
// the Machines it has, and the new set its replicas.
func onDeleteHeld(olds []setState, newSet *setState) int32 {
	var held int32
	for _, o := range olds {
		held += min(o.replicas, o.actual)
	}
	if newSet != nil {
		held += newSet.replicas
	}
	return held
}

func sortedByCreation(sets []setState) []setState {
	out := slices.Clone(sets)
	slices.SortStableFunc(out, byCreation)
	return out
}

// complete reports whether the rollout is done: every replica on the new template, available, no
// old Machine left, and none of the new set's to replace (see findStale).
func complete(s *scope) bool {
	if s.newSet == nil || len(s.stale) > 0 || s.inPlacePending > 0 {
		return false
	}
	st := stateOf(s.newSet)
	if st.replicas != s.replicas() || st.actual != s.replicas() || st.available < s.replicas() {
		return false
	}
	for _, o := range s.oldSets {
		if o.Status.Replicas > 0 {
			return false
		}
	}
	return true
}
