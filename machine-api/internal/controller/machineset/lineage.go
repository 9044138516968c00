package machineset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
)

// The set's part of the lineage protocol (package lineage): a Machine a health check remediated
// carries the lineage mark and finalizer; each new Machine that fills the gap it leaves takes
// over its lineage (count + 1), and the finalizer is then removed. A marked Machine the set does
// not replace (it was scaled down meanwhile, does not create, or is being deleted) is released
// too: its lineage ends there. Which marked Machines still wait for an heir is read from the
// Machines at every reconcile (lineage.Sort), never remembered.

// Events about lineages.
const (
	// EventLineageEnded (Normal): a remediated Machine's lineage was not handed on, because the
	// set does not replace it.
	EventLineageEnded = "LineageEnded"
)

// lineages is what one reconcile knows and did about the lineages of its set's Machines.
type lineages struct {
	awaiting   []*v1beta1.Machine // marked Machines without an heir yet, in the order they get one
	handedOver []*v1beta1.Machine // marked Machines whose heir exists: only the finalizer is left
	given      int                // awaiting[:given] were given to Machines this reconcile creates
	heirs      map[string]*v1beta1.Machine
	created    map[string]bool // heirs whose create succeeded, by name
}

// lineagesOf sorts out the marked Machines of the set, once per reconcile.
func (s *scope) lineagesOf() *lineages {
	if s.lineages == nil {
		awaiting, handed := lineage.Sort(s.machines)
		s.lineages = &lineages{awaiting: awaiting, handedOver: handed}
	}
	return s.lineages
}

// bequeath gives the new Machine m the lineage of the next marked Machine still without an heir,
// if any (called for each Machine the set is about to create).
func (s *scope) bequeath(m *v1beta1.Machine) {
	l := s.lineagesOf()
	if l.given == len(l.awaiting) {
		return
	}
	from := l.awaiting[l.given]
	l.given++
	lineage.Inherit(m, from)
	if l.heirs == nil {
		l.heirs = map[string]*v1beta1.Machine{}
	}
	l.heirs[m.Name] = from
}

// bequeathed records that the create of m succeeded.
func (s *scope) bequeathed(m *v1beta1.Machine) {
	l := s.lineagesOf()
	if l.heirs[m.Name] == nil {
		return
	}
	if l.created == nil {
		l.created = map[string]bool{}
	}
	l.created[m.Name] = true
}

// moreToCreate reports whether the set still has a gap it will fill in a later reconcile (this one
// created at most maxBurst Machines).
func (s *scope) moreToCreate() bool {
	return int32(len(s.active())+s.inFlight()) < replicasOf(s.set) && !s.frozen && (s.owner == nil || s.owner.holdCreates == "")
}

// handOverLineages, after the set scaled, removes the lineage finalizer of every marked Machine
// whose lineage was handed on (now or before), and of those the set will not replace: all of them
// when it created what it needed, none of the waiting ones when a create failed or more Machines
// are still to come (a later reconcile gives them their heirs). A conflict leaves the finalizer
// for the next reconcile, which reads the Machine again.
func (r *Reconciler) handOverLineages(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	l := s.lineagesOf()
	done := append([]*v1beta1.Machine(nil), l.handedOver...)
	for name, from := range l.heirs {
		if l.created[name] {
			done = append(done, from)
		}
	}
	var ended []*v1beta1.Machine
	if s.createErr == nil && !s.moreToCreate() {
		ended = l.awaiting[l.given:]
	}
	errs := r.releaseLineages(ctx, s, done)
	if names := released(ended, r.releaseLineages(ctx, s, ended)); len(names) > 0 {
		r.Recorder.Eventf(s.set, nil, "Normal", EventLineageEnded, "Release",
			"the lineage of %d remediated Machines ends: the set does not replace them: %s", len(names), preview(names))
	}
	return reconcile.Result{}, true, errors.Join(errs...)
}

// releaseAllLineages removes the lineage finalizer of every marked Machine of a set being deleted:
// none is replaced.
func (r *Reconciler) releaseAllLineages(ctx context.Context, s *scope) error {
	awaiting, handed := lineage.Sort(s.machines)
	return errors.Join(r.releaseLineages(ctx, s, append(awaiting, handed...))...)
}

// releaseLineages removes the lineage finalizer of each of machines and returns the errors, one
// per Machine (nil when removed, or when the Machine is gone).
func (r *Reconciler) releaseLineages(ctx context.Context, s *scope, machines []*v1beta1.Machine) []error {
	return parallel(len(machines), func(i int) error {
		m := machines[i]
		_, err := lineage.Update(ctx, r.Client, m, lineage.Release)
		switch {
		case err == nil:
			log.FromContext(ctx).V(1).Info("released the lineage finalizer", "machine", m.Name, "lineage", m.Annotations[v1beta1.LineageAnnotation])
			return nil
		case apierrors.IsNotFound(err):
			return nil
		default:
			return fmt.Errorf("removing the lineage finalizer of machine %s: %w", m.Name, err)
		}
	})
}

// released returns the names of machines whose release succeeded (errs as releaseLineages returns).
func released(machines []*v1beta1.Machine, errs []error) []string {
	var names []string
	for i, m := range machines {
		if errs[i] == nil {
			names = append(names, m.Name)
		}
	}
	return names
}
