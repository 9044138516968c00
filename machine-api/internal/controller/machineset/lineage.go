package machineset

import (
	"context"
	"errors"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/steps"
)

// The set remediates the Machines a MachineHealthCheck judged unhealthy (package lineage): a
// Machine whose OwnerRemediated condition is False counts as gone, so scale creates a Machine in
// its place, which carries the remediated Machine's lineage from its creation (count + 1, the
// longest lineages first); then remediateMachines deletes the remediated Machine. A requested
// Machine the set does not replace (it was scaled down meanwhile, is Frozen, holds its creates)
// is deleted too: its lineage ends there. Which requested Machines still wait for a replacement is
// read from the Machines at every reconcile (lineage.Sort), never remembered, so a restart between
// the create and the delete creates no second replacement.

// Events about remediation.
const (
	// EventRemediated (Normal): the set deleted Machines a health check asked it to replace.
	EventRemediated = "Remediated"
	// EventLineageEnded (Normal): a remediated Machine's lineage was not handed on, because the
	// set does not replace it.
	EventLineageEnded = "LineageEnded"
)

// lineages is what one reconcile knows and did about the set's requested Machines.
type lineages struct {
	awaiting []*v1beta1.Machine // requested Machines without a replacement yet, in the order they get one
	replaced []*v1beta1.Machine // requested Machines not deleted yet whose replacement exists
	given    int                // awaiting[:given] were given to Machines this reconcile creates
	heirs    map[string]*v1beta1.Machine
	created  map[string]bool // heirs whose create succeeded, by name
}

// lineagesOf sorts out the requested Machines of the set, once per reconcile.
func (s *scope) lineagesOf() *lineages {
	if s.lineages == nil {
		awaiting, replaced := lineage.Sort(s.machines, s.toReplace)
		s.lineages = &lineages{awaiting: awaiting, replaced: replaced}
	}
	return s.lineages
}

// bequeath gives the new Machine m the lineage of the next requested Machine still without a
// replacement, if any (called for each Machine the set is about to create).
func (s *scope) bequeath(m *v1beta1.Machine) {
	l := s.lineagesOf()
	if l.given == len(l.awaiting) {
		return
	}
	from := l.awaiting[l.given]
	l.given++
	s.inherit(m, from)
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
	return int32(len(s.active())+s.created) < replicasOf(s.set) && !s.frozen && (s.owner == nil || s.owner.holdCreates == "")
}

// remediateMachines, after the set scaled, deletes every Machine to be replaced (a health check
// requested it, or it did not launch in time) whose replacement
// exists (created now or before), and those the set will not replace: all of them when it created
// what it needed, none of the waiting ones when a create failed or more Machines are still to come
// (a later reconcile creates their replacements first). Deleting is the remediation: the machine
// controller drains the Machine and removes its instance as for any deletion.
func (r *Reconciler) remediateMachines(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	l := s.lineagesOf()
	replaced := append([]*v1beta1.Machine(nil), l.replaced...)
	for name, from := range l.heirs {
		if l.created[name] && from.DeletionTimestamp.IsZero() {
			replaced = append(replaced, from)
		}
	}
	var ended []*v1beta1.Machine
	if s.createErr == nil && !s.moreToCreate() {
		for _, m := range l.awaiting[l.given:] {
			if m.DeletionTimestamp.IsZero() {
				ended = append(ended, m)
			}
		}
	}
	if len(replaced)+len(ended) == 0 {
		return reconcile.Result{}, true, nil
	}
	c := sortByCause(s, replaced, ended)
	err := errors.Join(
		r.deleteMachines(ctx, s, c.requested, EventRemediated, "deleting %d Machines a health check asked the set to replace"),
		r.deleteLate(ctx, s, c.late),
		r.deleteInterrupted(ctx, s, c.interrupted, c.why))
	if names := deletedOf(s, ended); len(names) > 0 {
		r.Recorder.Eventf(s.set, nil, "Normal", EventLineageEnded, "Delete",
			"the lineage of %d remediated Machines ends: the set does not replace them: %s", len(names), preview(names))
		log.FromContext(ctx).Info("remediated machines deleted without a replacement: the set does not replace them", "machines", names)
	}
	return reconcile.Result{}, true, err
}

// causes are the Machines remediateMachines deletes now, by why the set replaces them.
type causes struct {
	requested, late, interrupted []*v1beta1.Machine
	why                          map[string]string // why each interrupted Machine goes now
}

// sortByCause sorts the replaced and ended Machines by cause: a health check's request wins, then
// a launch timeout, then an interruption. An interrupted Machine whose replacement exists goes
// only once interruptionDue says so; the time until then is left in s.interruptionWait.
func sortByCause(s *scope, replaced, ended []*v1beta1.Machine) causes {
	c := causes{why: map[string]string{}}
	heirs := map[string]*v1beta1.Machine{}
	for _, m := range s.machines {
		if from := m.Annotations[v1beta1.ReplacesAnnotation]; from != "" {
			heirs[from] = m
		}
	}
	isEnded := map[string]bool{}
	for _, m := range ended {
		isEnded[m.Name] = true
	}
	for _, m := range append(replaced, ended...) {
		switch {
		case lineage.IsRequested(m):
			c.requested = append(c.requested, m)
		case s.launchesOf().replace[m.Name]:
			c.late = append(c.late, m)
		case isEnded[m.Name]:
			c.interrupted = append(c.interrupted, m)
			c.why[m.Name] = "the set does not replace it"
		default:
			due, why, wait := interruptionDue(m, heirs[m.Name], s.now)
			if !due {
				s.interruptionWait = steps.SoonestAfter(s.interruptionWait, wait)
				continue
			}
			c.interrupted = append(c.interrupted, m)
			c.why[m.Name] = why
		}
	}
	return c
}

// deleteInterrupted deletes Machines whose instance is to be interrupted, with an event for each
// that says when and why now.
func (r *Reconciler) deleteInterrupted(ctx context.Context, s *scope, machines []*v1beta1.Machine, why map[string]string) error {
	if len(machines) == 0 {
		return nil
	}
	err := r.deleteMachines(ctx, s, machines, "", "")
	deleted := deletedOf(s, machines)
	for _, m := range machines {
		if slices.Contains(deleted, m.Name) {
			i := m.Status.Interruption
			r.Recorder.Eventf(s.set, m, "Normal", EventInterrupted, "Delete",
				"Machine %s's instance goes away at %s (%s); deleting it, which drains its Node: %s",
				m.Name, i.Deadline.UTC().Format(time.RFC3339), i.Reason, why[m.Name])
		}
	}
	if len(deleted) > 0 {
		log.FromContext(ctx).Info("deleting machines whose instance is to be interrupted", "machines", deleted)
	}
	return err
}

// deletedOf returns the names of machines whose deletion this reconcile requested.
func deletedOf(s *scope, machines []*v1beta1.Machine) []string {
	deleted := make(map[string]bool, len(s.deleted))
	for _, n := range s.deleted {
		deleted[n] = true
	}
	var names []string
	for _, m := range machines {
		if deleted[m.Name] {
			names = append(names, m.Name)
		}
	}
	return names
}

// deleteLate deletes Machines that did not reach Running in time, with a Warning event that says
// where each stopped.
func (r *Reconciler) deleteLate(ctx context.Context, s *scope, late []*v1beta1.Machine) error {
	if len(late) == 0 {
		return nil
	}
	err := r.deleteMachines(ctx, s, late, "", "")
	deleted := deletedOf(s, late)
	for _, m := range late {
		if slices.Contains(deleted, m.Name) {
			r.Recorder.Eventf(s.set, m, "Warning", EventLaunchTimedOut, "Delete",
				"Machine %s did not reach Running within %ds of its creation and %s; deleting it, its replacement created",
				m.Name, s.set.Spec.MachineLaunch.TimeoutSeconds, whyStuck(m))
		}
	}
	if len(deleted) > 0 {
		log.FromContext(ctx).Info("deleting machines that did not launch in time, their replacements created", "machines", deleted)
	}
	return err
}
