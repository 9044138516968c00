package machinehealthcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/conditions"
	"machineapi.dev/machine-api/reconcile/write"
)

// verdict is what this controller writes on a target's Machine: its HealthCheckSucceeded
// condition, and OwnerRemediated while the Machine's MachineSet is asked to replace it.
type verdict struct {
	health metav1.Condition
	owner  *metav1.Condition // nil: the Machine must not carry one from this controller
}

// machineVerdict returns the verdict o's Machine should carry, or false when this controller
// leaves the Machine's conditions as they are (Machines being deleted, paused Machines). remedy
// describes the remediation in words ("MachineSet web-1 replaces it ..."); it is called only for
// Machines being remediated. external: the check remediates through requests, not the owner.
func machineVerdict(o *outcome, remedy func(*outcome) string, external bool) (verdict, bool) {
	m := o.target.machine
	if !m.DeletionTimestamp.IsZero() || v1beta1.IsPaused(m.Annotations) {
		return verdict{}, false
	}
	c := metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, ObservedGeneration: m.Generation, Message: o.health.message}
	v := verdict{}
	switch {
	case o.health.state == stateHealthy:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonHealthy, healthyMessage(o.target)
	case o.health.state == stateInFlight:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRemediating
		if cur := meta.FindStatusCondition(m.Status.Conditions, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
			c.Message = cur.Message // what it said when the remediation started is still true
		}
		if owner := lineage.Requested(m); owner != nil {
			kept := *owner // re-applied as it is, or server-side apply would drop it
			v.owner = &kept
		}
	case o.action == actRemediate:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRemediating
		c.Message += "; remediating: " + remedy(o)
		if external {
			break // the request is the verdict
		}
		reason := v1beta1.RemediationRequestedReason
		if o.reset {
			reason = v1beta1.RemediationRequestedLineageResetReason
		}
		v.owner = &metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: reason,
			ObservedGeneration: m.Generation, Message: remedy(o)}
	case o.health.state == stateWaiting:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonWaitingForNode
	case o.health.state == stateSuspect:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonSuspect
		if o.why != "" {
			c.Message += "; " + o.why
		}
	default:
		c.Status, c.Reason = metav1.ConditionFalse, o.blocked
		c.Message += "; not remediated: " + o.why
	}
	v.health = c
	return v, true
}

// healthyMessage is the message of a healthy target, made only when needed: a pass over thousands
// of healthy Machines formats nothing.
func healthyMessage(t *target) string {
	if t.node == nil && t.machine.Status.NodeRef != nil {
		return "Node " + t.machine.Status.NodeRef.Name + " is linked in another cluster: its conditions are not visible here"
	}
	if t.node == nil {
		return "healthy"
	}
	return "Node " + t.node.Name + " is healthy"
}

// sameCondition reports whether a and b say the same thing (transition times aside).
func sameCondition(a *metav1.Condition, b metav1.Condition) bool {
	return a != nil && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration
}

// carries reports whether m's conditions already say what v says.
func (v verdict) carries(m *v1beta1.Machine) bool {
	if !sameCondition(meta.FindStatusCondition(m.Status.Conditions, v.health.Type), v.health) {
		return false
	}
	owner := meta.FindStatusCondition(m.Status.Conditions, v1beta1.OwnerRemediatedCondition)
	if v.owner == nil {
		return owner == nil
	}
	return sameCondition(owner, *v.owner)
}

// computeStatus returns the health check's status after the pass in s. It makes no API calls.
func computeStatus(s *scope) v1beta1.MachineHealthCheckStatus {
	mhc := s.mhc
	st := *mhc.Status.DeepCopy()
	st.ObservedGeneration = mhc.Generation
	c := metav1.Condition{Type: v1beta1.RemediationAllowedCondition, ObservedGeneration: mhc.Generation}
	switch ev := s.eval; {
	case s.invalid != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalidSpec, s.invalid.Error()
		st.RemediationsAllowed = 0
	case ev != nil:
		st.ExpectedMachines = int32(ev.total)
		st.CurrentHealthy = int32(ev.healthy)
		st.CurrentUnhealthy = int32(ev.unhealthy)
		st.CurrentSuspect = int32(ev.suspect)
		st.RetriesExhausted = int32(len(ev.exhausted))
		st.RemediationsAllowed = ev.remediationsAllowed()
		st.Targets = make([]string, len(ev.outcomes))
		for i := range ev.outcomes {
			st.Targets[i] = ev.outcomes[i].target.machine.Name
		}
		if len(st.Targets) == 0 {
			st.Targets = nil
		}
		c.Status, c.Reason, c.Message = remediationAllowed(ev)
		if ev.retry.limited() {
			conditions.Set(&st.Conditions, retriesExhausted(ev, mhc.Generation), s.now)
		} else {
			meta.RemoveStatusCondition(&st.Conditions, v1beta1.RetriesExhaustedCondition)
		}
	default:
		return st
	}
	conditions.Set(&st.Conditions, c, s.now)
	return st
}

// counts says what is failing, for RemediationAllowed: "6 of 10 targets failing (1 unhealthy, 5
// within their timeout)", with the remediations in progress when there are some.
func (ev *evaluation) counts() string {
	inFlight := ""
	if ev.inFlight > 0 {
		inFlight = fmt.Sprintf(", %d being remediated", ev.inFlight)
	}
	return fmt.Sprintf("%d of %d targets failing (%d unhealthy%s, %d within their timeout)",
		ev.failing(), ev.total, ev.unhealthy-ev.inFlight, inFlight, ev.suspect)
}

// remediationAllowed is the RemediationAllowed condition for ev, its message giving the counts.
func remediationAllowed(ev *evaluation) (metav1.ConditionStatus, string, string) {
	if !ev.allowed {
		reason, msg := ev.limits.denial(ev.counts())
		return metav1.ConditionFalse, reason, msg
	}
	msg := ev.counts() + ", within " + ev.limits.text
	if ev.limits.maxInFlightText != "" {
		msg += fmt.Sprintf("; %d remediations in progress (%s)", ev.inFlight+ev.started, ev.limits.maxInFlightText)
	}
	if !ev.resumedAt.IsZero() {
		return metav1.ConditionTrue, ReasonResumed, msg + fmt.Sprintf(
			"; remediation resumed at %s after too many targets failed: %d failing since before then are remediated only if they still fail a full timeout after it",
			ev.resumedAt.UTC().Format(time.RFC3339), ev.resumed)
	}
	return metav1.ConditionTrue, ReasonWithinLimits, msg
}

// maxNamed bounds the Machines a condition message names.
const maxNamed = 10

// retriesExhausted is the RetriesExhausted condition for ev: True, naming them, while Machines are
// kept unremediated because their lineage spent maxRetries.
func retriesExhausted(ev *evaluation, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1beta1.RetriesExhaustedCondition, ObservedGeneration: generation}
	if len(ev.exhausted) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonWithinRetries
		c.Message = "no unhealthy Machine's lineage has spent " + ev.retry.maxText
		return c
	}
	names := ev.exhausted
	more := ""
	if len(names) > maxNamed {
		names, more = names[:maxNamed], fmt.Sprintf(" and %d more", len(ev.exhausted)-maxNamed)
	}
	c.Status, c.Reason = metav1.ConditionTrue, ReasonRetriesSpent
	c.Message = fmt.Sprintf("%d unhealthy Machines are kept for inspection, not remediated: their lineage has spent %s: %s%s; "+
		"delete such a Machine by hand to start its slot over, once what makes its Machines fail is fixed",
		len(ev.exhausted), ev.retry.maxText, strings.Join(names, ", "), more)
	return c
}

// statusApply returns the server-side apply configuration of st, the whole status of mhc (the
// controller owns all of it). The UID makes the write fail rather than land on a check re-created
// under the same name.
func statusApply(mhc *v1beta1.MachineHealthCheck, st v1beta1.MachineHealthCheckStatus) (*acv1beta1.MachineHealthCheckApplyConfiguration, error) {
	ac, err := write.WholeStatus[acv1beta1.MachineHealthCheckStatusApplyConfiguration](st)
	if err != nil {
		return nil, err
	}
	return acv1beta1.MachineHealthCheck(mhc.Name, mhc.Namespace).WithUID(mhc.UID).WithStatus(ac), nil
}

// verdictApply returns the server-side apply configuration of v, the conditions of m this
// controller owns: HealthCheckSucceeded and, when v has it, OwnerRemediated (applying without it
// removes the one this controller wrote before). A condition's lastTransitionTime is now when its
// status changes, else the one m has. rv, when not empty, is the resourceVersion m must still
// have: the verdict that starts a remediation is applied only to the Machine as judged.
func verdictApply(m *v1beta1.Machine, v verdict, rv string, now time.Time) *acv1beta1.MachineApplyConfiguration {
	conds := slices.Clone(m.Status.Conditions)
	status := acv1beta1.MachineStatus()
	for _, c := range []*metav1.Condition{&v.health, v.owner} {
		if c == nil {
			continue
		}
		conditions.Set(&conds, *c, now)
		status.WithConditions(conditions.ApplyConfiguration(*meta.FindStatusCondition(conds, c.Type)))
	}
	ac := acv1beta1.Machine(m.Name, m.Namespace).WithUID(m.UID).WithStatus(status)
	if rv != "" {
		ac.WithResourceVersion(rv)
	}
	return ac
}
