package machineset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/disruption"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/reconcile/write"
)

// Every Machine a set deletes on purpose passes its pool's disruption budgets first
// (spec.disruption, which a MachineDeployment gives its sets): deleteMachines asks them, Machine
// by Machine in the order it was given, and deletes only those they allow now. The pool is the
// deployment's Machines across all its sets, or the standalone set's. A Machine held is not
// deleted: it gets Deleting=False/WaitingForDisruptionBudget (written by the set), the set's
// ScalingDown condition names it, and the set comes back when the answer may change.
//
// What counts: a Machine with a Node (status.nodeRef) being deleted disrupts its pool, whatever
// its reason, including those deleted by hand or because their instance vanished. A Machine
// without a Node disrupts no workload: it is neither counted nor held. Involuntary losses (the
// instance vanished, or is announced to end) are never held.
//
// Decisions are serialized in the process (budgetGate), and a deletion this process made counts
// until the cache shows it, so that two sets of one deployment, or a reconcile reading a cache a
// moment behind, never both take the last slot of a budget.

// ReasonWaitingForDisruptionBudget is the reason of the Deleting=False condition the set writes on
// a Machine it would delete but its pool's disruption budgets hold, and of its event.
const ReasonWaitingForDisruptionBudget = "WaitingForDisruptionBudget"

// budgetPoll is how often a set holding Machines looks again: a Machine of another set of the
// pool finishing its deletion brings no event to this one.
const budgetPoll = 15 * time.Second

// recentDeletion is how long a deletion this process made counts without the cache showing it
// (a delete whose answer was lost may not have happened).
const recentDeletion = time.Minute

// budgetGate serializes the budget decisions of every pool in the process and remembers the
// deletions it allowed until the cache shows them.
type budgetGate struct {
	mu      sync.Mutex
	allowed map[types.UID]map[types.UID]time.Time // pool → Machine → when its deletion was allowed
}

// pool is a disruption pool as one reconcile sees it.
type pool struct {
	key      types.UID // the deployment's UID, or the standalone set's
	name     string    // "MachineDeployment x" or "MachineSet x", for messages
	budgets  []v1beta1.DisruptionBudget
	machines []*v1beta1.Machine // every Machine of the pool, deleting ones included
}

// heldMachine is a Machine the budgets (or its do-not-disrupt annotation) hold, and why.
type heldMachine struct {
	machine      *v1beta1.Machine
	update       bool // held from an in-place update, not a deletion
	reason       v1beta1.DisruptionReason
	verdict      disruption.Verdict
	doNotDisrupt bool // held by v1beta1.DoNotDisruptAnnotation, not by a budget
}

// ReasonDoNotDisrupt is the reason of the Deleting=False condition the set writes on a Machine
// it would delete but whose do-not-disrupt annotation holds it, and of its event.
const ReasonDoNotDisrupt = "DoNotDisrupt"

func budgetsOf(set *v1beta1.MachineSet) []v1beta1.DisruptionBudget {
	if set.Spec.Disruption == nil {
		return nil
	}
	return set.Spec.Disruption.Budgets
}

func markedDoNotDisrupt(m *v1beta1.Machine) bool {
	_, ok := m.Annotations[v1beta1.DoNotDisruptAnnotation]
	return ok
}

// doNotDisrupt says whether m's do-not-disrupt annotation holds its voluntary deletion at now,
// as a verdict: its message, and when its grace period ends (zero: no end).
func doNotDisrupt(m *v1beta1.Machine, now time.Time) (disruption.Verdict, bool) {
	value, ok := m.Annotations[v1beta1.DoNotDisruptAnnotation]
	if !ok {
		return disruption.Verdict{}, false
	}
	return annotationHolds("the "+v1beta1.DoNotDisruptAnnotation+" annotation", value, holdSince(m, now).Time, now)
}

// annotationHolds reads a do-not-disrupt annotation's value (what names where it is): it holds
// with "true" or no value, for a grace period from since with a duration, and, saying why, with a
// value it cannot read.
func annotationHolds(what, value string, since, now time.Time) (disruption.Verdict, bool) {
	switch value = strings.TrimSpace(value); value {
	case "", "true":
		return disruption.Verdict{Message: what + " holds it until it is removed"}, true
	}
	grace, err := time.ParseDuration(value)
	if err != nil || grace < 0 {
		return disruption.Verdict{Message: fmt.Sprintf("%s holds it: its value %q is neither \"true\" nor a duration such as 2h, so it holds until it is fixed or removed", what, value)}, true
	}
	end := since.Add(grace)
	if !now.Before(end) {
		return disruption.Verdict{}, false
	}
	return disruption.Verdict{Message: fmt.Sprintf("%s holds it for %s, until %s", what, grace, end.UTC().Format(time.RFC3339)), Until: end}, true
}

// podHolds reads, for each victim with a Node that no other rule exempts, the pods on that Node
// from the API server, and returns the holds of those with a do-not-disrupt annotation, by
// Machine name (pods that are done or terminating hold nothing). A Node whose pods cannot be read
// holds its Machine: nothing is deleted by surprise.
func (r *Reconciler) podHolds(ctx context.Context, victims []*v1beta1.Machine, now time.Time) map[string]disruption.Verdict {
	holds := make([]*disruption.Verdict, len(victims))
	parallel(len(victims), func(i int) error {
		m := victims[i]
		if _, exempt := disruptionOf(m); exempt != "" {
			return nil
		}
		node := m.Status.NodeRef.Name
		pods := &corev1.PodList{}
		if err := r.APIReader.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
			holds[i] = &disruption.Verdict{Message: fmt.Sprintf("the pods of Node %s cannot be read to look for the %s annotation: %v", node, v1beta1.DoNotDisruptAnnotation, err)}
			return nil
		}
		for _, p := range pods.Items {
			value, ok := p.Annotations[v1beta1.DoNotDisruptAnnotation]
			if !ok || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			if v, hold := annotationHolds(fmt.Sprintf("the %s annotation of pod %s/%s", v1beta1.DoNotDisruptAnnotation, p.Namespace, p.Name), value, holdSince(m, now).Time, now); hold {
				holds[i] = &v
				return nil
			}
		}
		return nil
	})
	out := map[string]disruption.Verdict{}
	for i, v := range holds {
		if v != nil {
			out[victims[i].Name] = *v
		}
	}
	return out
}

// isHold reports whether c is a hold this file writes.
func isHold(c *metav1.Condition) bool {
	return c != nil && c.Status == metav1.ConditionFalse && (c.Reason == ReasonWaitingForDisruptionBudget || c.Reason == ReasonDoNotDisrupt)
}

// disruptionOf says why deleting m now disrupts its pool: the voluntary reason, or exempt (never
// held) with why: m has no Node, or its loss is involuntary.
func disruptionOf(m *v1beta1.Machine) (reason v1beta1.DisruptionReason, exempt string) {
	switch {
	case m.Status.NodeRef == nil:
		return "", "it has no Node"
	case m.Status.FailureReason != nil && *m.Status.FailureReason == v1beta1.InstanceMissingFailure:
		return "", "its instance no longer exists"
	case m.Status.Interruption != nil:
		return "", "its instance is announced to end"
	case lineage.IsRequested(m):
		return v1beta1.DisruptionRemediation, ""
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.UpToDateCondition); c != nil && c.Status == metav1.ConditionFalse {
		switch c.Reason {
		case uptodate.ReasonTemplateChanged:
			return v1beta1.DisruptionRollout, ""
		case uptodate.ReasonMachineClassChanged:
			return v1beta1.DisruptionClassChange, ""
		case uptodate.ReasonRolloutAfter, uptodate.ReasonMaxAgeExceeded:
			return v1beta1.DisruptionExpired, ""
		}
	}
	return v1beta1.DisruptionScaleDown, ""
}

// disrupting reports whether m counts against its pool's budgets: it has a Node and is being
// deleted, or updated in place by an update that stops its workloads.
func disrupting(m *v1beta1.Machine) bool {
	return m.Status.NodeRef != nil && !m.DeletionTimestamp.IsZero() || updatingDisruptively(m)
}

// withinBudget runs del on the victims the pool's budgets allow now, under the gate's lock, and
// records the others in s.held. A set being deleted, or without budgets, deletes every victim.
func (r *Reconciler) withinBudget(ctx context.Context, s *scope, victims []*v1beta1.Machine, del func([]*v1beta1.Machine) error) error {
	if !s.set.DeletionTimestamp.IsZero() || len(victims) == 0 {
		return del(victims)
	}
	pods := r.podHolds(ctx, victims, s.now)
	if len(budgetsOf(s.set)) == 0 && len(pods) == 0 && !slices.ContainsFunc(victims, markedDoNotDisrupt) {
		return del(victims)
	}
	g := &r.budgets
	g.mu.Lock()
	defer g.mu.Unlock()
	p, err := r.poolOf(ctx, s)
	if err != nil {
		return err
	}
	count := g.disrupting(p, s.now)
	size := int32(len(p.machines))
	var allowed []*v1beta1.Machine
	for _, m := range victims {
		reason, exempt := disruptionOf(m)
		if exempt != "" {
			allowed = append(allowed, m)
			if m.Status.NodeRef != nil {
				count++
			}
			continue
		}
		if v, holds := doNotDisrupt(m, s.now); holds {
			s.held = append(s.held, heldMachine{machine: m, reason: reason, verdict: v, doNotDisrupt: true})
			continue
		}
		if v, holds := pods[m.Name]; holds {
			s.held = append(s.held, heldMachine{machine: m, reason: reason, verdict: v, doNotDisrupt: true})
			continue
		}
		v := disruption.Decide(p.budgets, reason, size, count, s.now)
		if v.Holds() {
			s.held = append(s.held, heldMachine{machine: m, reason: reason, verdict: v})
			continue
		}
		allowed = append(allowed, m)
		count++
	}
	err = del(allowed)
	g.remember(p.key, allowed, s)
	return err
}

// poolOf reads the pool of s's set from the cache: the Machines of every set of its deployment,
// or its own.
func (r *Reconciler) poolOf(ctx context.Context, s *scope) (*pool, error) {
	p := &pool{key: s.set.UID, name: "MachineSet " + s.set.Name, budgets: budgetsOf(s.set), machines: s.machines}
	if s.owner == nil || len(p.budgets) == 0 {
		return p, nil
	}
	p.key, p.name, p.machines = s.owner.uid, "MachineDeployment "+s.owner.name, nil
	sets := &v1beta1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(s.set.Namespace), client.MatchingFields{index.MachineSetByDeployment: string(s.owner.uid)},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the MachineSets of MachineDeployment %s: %w", s.owner.name, err)
	}
	for i := range sets.Items {
		if sets.Items[i].UID == s.set.UID {
			p.machines = append(p.machines, s.machines...)
			continue
		}
		list := &v1beta1.MachineList{}
		if err := r.Client.List(ctx, list, client.InNamespace(s.set.Namespace), client.MatchingFields{index.MachineBySet: string(sets.Items[i].UID)},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the Machines of MachineSet %s: %w", sets.Items[i].Name, err)
		}
		for j := range list.Items {
			p.machines = append(p.machines, &list.Items[j])
		}
	}
	return p, nil
}

// disrupting counts the pool's Machines that disrupt it now: those the cache shows being
// deleted with a Node, and those this process deleted that the cache does not show deleting yet.
// It forgets deletions the cache shows, or that are too old to be in flight.
func (g *budgetGate) disrupting(p *pool, now time.Time) int {
	count := 0
	byUID := make(map[types.UID]*v1beta1.Machine, len(p.machines))
	for _, m := range p.machines {
		byUID[m.UID] = m
		if disrupting(m) {
			count++
		}
	}
	for uid, at := range g.allowed[p.key] {
		m, ok := byUID[uid]
		switch {
		case !ok || disrupting(m) || now.Sub(at) > recentDeletion:
			delete(g.allowed[p.key], uid)
		default:
			count++
		}
	}
	return count
}

// remember records the deletions of Machines with a Node the set just requested.
func (g *budgetGate) remember(key types.UID, allowed []*v1beta1.Machine, s *scope) {
	for _, m := range allowed {
		if m.Status.NodeRef == nil || !slices.Contains(s.deleted, m.Name) && !slices.Contains(s.updated, m.Name) {
			continue
		}
		if g.allowed == nil {
			g.allowed = map[types.UID]map[types.UID]time.Time{}
		}
		if g.allowed[key] == nil {
			g.allowed[key] = map[types.UID]time.Time{}
		}
		g.allowed[key][m.UID] = s.now
	}
}

// reportHolds writes Deleting=False/WaitingForDisruptionBudget on the Machines held by this
// reconcile (with an event when the hold starts or its message changes), and takes it off the set's
// Machines no longer held. It asks to come back when a budget's answer may change, and at least
// every budgetPoll while anything is held.
func (r *Reconciler) reportHolds(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	held := map[string]bool{}
	var errs []error
	wait := time.Duration(0)
	for _, h := range s.held {
		msg, reason := holdMessage(h), ReasonWaitingForDisruptionBudget
		if h.doNotDisrupt {
			reason = ReasonDoNotDisrupt
		}
		wait = budgetPoll
		if u := h.verdict.Until; !u.IsZero() && u.Sub(s.now) < wait {
			wait = max(u.Sub(s.now), time.Second)
		}
		if h.update {
			// An update held is no deletion: the Machine's Deleting condition stays as it is;
			// the event and the set's condition say it.
			r.Recorder.Eventf(h.machine, s.set, "Normal", reason, "UpdateInPlace", "%s", msg)
			continue
		}
		held[h.machine.Name] = true
		if c := meta.FindStatusCondition(h.machine.Status.Conditions, v1beta1.DeletingCondition); c == nil || c.Reason != reason || c.Message != msg {
			errs = append(errs, r.setHold(ctx, h.machine, reason, msg))
			r.Recorder.Eventf(h.machine, s.set, "Normal", reason, "Delete", "%s", msg)
			if !h.doNotDisrupt {
				heldTotal.WithLabelValues(string(h.reason)).Inc()
			}
			log.FromContext(ctx).Info("disruption budget holds the deletion of a Machine", "machine", h.machine.Name, "reason", h.reason, "budget", h.verdict.Budget)
		}
	}
	for _, m := range s.machines {
		if held[m.Name] || !m.DeletionTimestamp.IsZero() {
			continue
		}
		if isHold(meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition)) {
			errs = append(errs, r.setHold(ctx, m, "", ""))
		}
	}
	return reconcile.Result{RequeueAfter: wait}, true, errors.Join(errs...)
}

// holdMessage says which budget holds h and until when, for the Machine's condition.
func holdMessage(h heldMachine) string {
	what := "deleted"
	if h.update {
		what = "updated in place"
	}
	msg := fmt.Sprintf("not %s yet (%s): %s", what, h.reason, h.verdict.Message)
	if u := h.verdict.Until; !u.IsZero() && !h.doNotDisrupt {
		msg += fmt.Sprintf("; the budgets change at %s", u.UTC().Format(time.RFC3339))
	}
	return msg
}

// setHold applies, as the set's field manager, Deleting=False with reason and msg on m's status, or
// no condition at all when msg is empty (which removes the set's).
func (r *Reconciler) setHold(ctx context.Context, m *v1beta1.Machine, reason, msg string) error {
	st := acv1beta1.MachineStatus()
	if msg != "" {
		st.WithConditions(metav1ac.Condition().WithType(v1beta1.DeletingCondition).WithStatus(metav1.ConditionFalse).
			WithReason(reason).WithMessage(msg).WithObservedGeneration(m.Generation).
			WithLastTransitionTime(holdSince(m, r.Clock.Now())))
	}
	ac := acv1beta1.Machine(m.Name, m.Namespace).WithUID(m.UID).WithStatus(st)
	if _, err := write.Status(ctx, r.Client, ac, FieldOwner, &v1beta1.Machine{}); err != nil {
		return fmt.Errorf("writing the disruption budget hold on Machine %s: %w", m.Name, err)
	}
	return nil
}

// holdSince keeps the start of a hold across message changes.
func holdSince(m *v1beta1.Machine, now time.Time) metav1.Time {
	if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition); isHold(c) {
		return c.LastTransitionTime
	}
	return metav1.NewTime(now)
}

// heldSummary says, for the set's ScalingDown condition, which Machines the budgets hold.
func heldSummary(s *scope) string {
	if len(s.held) == 0 {
		return ""
	}
	names := make([]string, len(s.held))
	for i, h := range s.held {
		names[i] = h.machine.Name
	}
	return fmt.Sprintf("%d Machines held by the disruption budget (%s): %s", len(names), strings.TrimSpace(s.held[0].verdict.Message), preview(names))
}
