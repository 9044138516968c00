package machinedeployment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/uptodate"
)

// ReasonInPlaceUnsupported (Progressing=False): spec.rollout.inPlace is Only and the provider
// cannot apply the template change to every Machine in place.
const ReasonInPlaceUnsupported = "InPlaceUpdateUnsupported"

// EventUpdatingInPlace: the deployment takes a template change in place.
const EventUpdatingInPlace = "UpdatingInPlace"

// planPoll is how often a deployment waiting for its Machines' in-place plans looks again.
const planPoll = 5 * time.Second

// updateInPlace takes a template change in place when spec.rollout.inPlace allows it (see
// DecideInPlace): instead of creating a MachineSet for the new template, it gives the new template
// (and the next revision) to the one set holding the Machines, which then gives each Machine the
// new spec as its pace allows, and each Machine's instance is updated by its provider. The set
// keeps its name; its template hash, and so its Machines' revision, is the new one. An old empty
// set that had the new template is deleted first: the set updated in place now holds that template.
func (r *Reconciler) updateInPlace(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.md.InPlace() == v1beta1.InPlaceNever || s.newSet != nil || s.md.Spec.Paused {
		return reconcile.Result{}, true, nil
	}
	var machines []*v1beta1.Machine
	if set := holdingOne(s.oldSets); set != nil {
		list := &v1beta1.MachineList{}
		if err := r.Client.List(ctx, list, client.InNamespace(s.md.Namespace), client.MatchingFields{index.MachineBySet: string(set.UID)},
			client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("listing the Machines of MachineSet %s: %w", set.Name, err)
		}
		for i := range list.Items {
			machines = append(machines, &list.Items[i])
		}
	}
	d := DecideInPlace(s.md, s.oldSets, machines)
	switch d.Route {
	case RouteBlocked:
		s.blocked, s.blockedReason = d.Message, ReasonInPlaceUnsupported
		return reconcile.Result{}, false, nil
	case RouteWait:
		s.waiting = d.Message
		return reconcile.Result{RequeueAfter: planPoll}, false, nil
	case RouteInPlace:
		return reconcile.Result{}, false, r.retemplate(ctx, s, d.Set, d.Paths)
	case RouteReplace:
		log.FromContext(ctx).Info("replacing the Machines rather than updating them in place", "why", d.Message)
	}
	return reconcile.Result{}, true, nil
}

// Route is how a MachineDeployment takes a template change.
type Route string

// The routes of DecideInPlace.
const (
	// RouteReplace: a new MachineSet, and the Machines replaced (spec.rollout.inPlace Never, or
	// Prefer when the provider cannot update every Machine in place).
	RouteReplace Route = "Replace"
	// RouteInPlace: the set holding the Machines gets the template, and its Machines are updated in
	// place.
	RouteInPlace Route = "InPlace"
	// RouteWait: not every Machine has its provider's plan for the template yet.
	RouteWait Route = "Wait"
	// RouteBlocked: spec.rollout.inPlace is Only and the change cannot be made in place.
	RouteBlocked Route = "Blocked"
)

// InPlaceDecision is DecideInPlace's answer.
type InPlaceDecision struct {
	Route Route
	// Set is the set updated in place (RouteInPlace).
	Set *v1beta1.MachineSet
	// Paths are the fields updated in place, over every Machine (RouteInPlace).
	Paths []string
	// Disruptive says that some Machine's update drains and reboots it (RouteInPlace).
	Disruptive bool
	// Message says why, for RouteReplace, RouteWait and RouteBlocked.
	Message string
}

// DecideInPlace decides how md takes its template when no set has that template yet: sets are its
// sets (not deleting), machines the Machines of the one set holding Machines (holdingOne). In
// place when spec.rollout.inPlace is Prefer or Only, the strategy is not OnDelete, one set holds
// every Machine, and each of its Machines (not deleting) has a plan from its provider for the
// template (status.inPlaceUpdate, recorded by the machine controller) naming no field the provider
// cannot apply. Otherwise Prefer replaces and Only stalls; both wait for missing plans. kubectl
// machine rollout plan asks it too.
func DecideInPlace(md *v1beta1.MachineDeployment, sets []*v1beta1.MachineSet, machines []*v1beta1.Machine) InPlaceDecision {
	policy := md.InPlace()
	blockOr := func(msg string) InPlaceDecision {
		if policy == v1beta1.InPlaceOnly {
			return InPlaceDecision{Route: RouteBlocked, Message: "spec.rollout.inPlace is Only, but " + msg}
		}
		return InPlaceDecision{Route: RouteReplace, Message: msg}
	}
	switch {
	case policy == v1beta1.InPlaceNever:
		return InPlaceDecision{Route: RouteReplace, Message: "spec.rollout.inPlace is Never"}
	case md.Spec.Strategy.Type == v1beta1.OnDeleteStrategy:
		return InPlaceDecision{Route: RouteReplace, Message: "the OnDelete strategy replaces only the Machines users delete"}
	}
	set := holdingOne(sets)
	if set == nil {
		if holding(sets) == 0 {
			return InPlaceDecision{Route: RouteReplace, Message: "no Machines to update"}
		}
		return blockOr(fmt.Sprintf("%d MachineSets hold Machines (a rollout by replacement is in progress), and only one set's Machines are updated in place: "+
			"set spec.rollout.inPlace to Prefer to finish it by replacement", holding(sets)))
	}
	hash := uptodate.TemplateHash(&md.Spec.Template)
	var paths, unsupported, unsupportedOn, unplanned []string
	disruptive := false
	for _, m := range machines {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		rec := m.Status.InPlaceUpdate
		switch {
		case rec == nil && uptodate.SpecHash(&m.Spec) == hash:
			// It has the template already (a change undone before its update): nothing to do.
		case rec == nil || rec.TemplateHash != hash:
			unplanned = append(unplanned, m.Name)
		case len(rec.Unsupported) > 0:
			unsupported = append(unsupported, rec.Unsupported...)
			unsupportedOn = append(unsupportedOn, m.Name)
		default:
			paths = append(paths, rec.Paths...)
			disruptive = disruptive || rec.Disruption == v1beta1.InPlaceDisruptionDrain
		}
	}
	slices.Sort(unsupported)
	slices.Sort(paths)
	switch {
	case len(unsupported) > 0:
		return blockOr(fmt.Sprintf("the provider cannot update %s in place, for %d Machines (%s): change the template back, or set spec.rollout.inPlace to Prefer to replace them",
			strings.Join(slices.Compact(unsupported), ", "), len(unsupportedOn), preview(unsupportedOn)))
	case len(unplanned) > 0:
		slices.Sort(unplanned)
		return InPlaceDecision{Route: RouteWait, Message: fmt.Sprintf("waiting for the provider's in-place plan of %d Machines of MachineSet %s (%s)", len(unplanned), set.Name, preview(unplanned))}
	}
	return InPlaceDecision{Route: RouteInPlace, Set: set, Paths: slices.Compact(paths), Disruptive: disruptive}
}

// holding counts the sets that hold Machines (replicas, or Machines not yet gone).
func holding(sets []*v1beta1.MachineSet) int {
	n := 0
	for _, set := range sets {
		if stateOf(set).replicas > 0 || set.Status.Replicas > 0 {
			n++
		}
	}
	return n
}

// holdingOne returns the one set of sets that holds Machines, nil when none or several do.
func holdingOne(sets []*v1beta1.MachineSet) *v1beta1.MachineSet {
	if holding(sets) != 1 {
		return nil
	}
	for _, set := range sets {
		if stateOf(set).replicas > 0 || set.Status.Replicas > 0 {
			return set
		}
	}
	return nil
}

// retemplate gives set the deployment's template and the next revision, after deleting the old
// empty sets that had that template.
func (r *Reconciler) retemplate(ctx context.Context, s *scope, set *v1beta1.MachineSet, paths []string) error {
	for _, old := range s.oldSets {
		if old != set && setHash(old) == s.hash {
			if err := r.deleteSet(ctx, s, old); err != nil {
				return err
			}
		}
	}
	rev := strconv.FormatInt(maxRevision(s.oldSets)+1, 10)
	changed := set.DeepCopy()
	changed.Spec.Template.Spec = *s.md.Spec.Template.Spec.DeepCopy()
	applyDeploymentSpec(s.md, changed, false)
	changed.Annotations = maps.Clone(changed.Annotations)
	if changed.Annotations == nil {
		changed.Annotations = map[string]string{}
	}
	changed.Annotations[v1beta1.RevisionAnnotation] = rev
	withAutoscalerKeys(s.md, changed)
	if err := r.patchSet(ctx, set, changed); err != nil {
		return fmt.Errorf("giving MachineSet %s the template of MachineDeployment %s to update its Machines in place: %w", set.Name, s.md.Name, err)
	}
	s.scaled = true // progress
	r.Recorder.Eventf(s.md, set, "Normal", EventUpdatingInPlace, "Rollout",
		"updating the Machines of MachineSet %s in place (revision %s): %s", set.Name, rev, strings.Join(paths, ", "))
	log.FromContext(ctx).Info("updating Machines in place", "machineSet", set.Name, "revision", rev, "paths", paths)
	return r.recordRevision(ctx, s, rev)
}

// preview lists at most 5 names, and how many more there are.
func preview(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}

func setHash(set *v1beta1.MachineSet) string {
	return uptodate.TemplateHash(&set.Spec.Template)
}
