package machinehealthcheck

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// machineCondition returns the HealthCheckSucceeded condition o's Machine should carry, or false
// when this controller leaves the Machine's condition as it is (Machines being deleted, paused
// Machines). remedy describes the remediation in words ("deleting the Machine so that ..."); it is
// called only for Machines being remediated.
func machineCondition(o *outcome, remedy func(*outcome) string) (metav1.Condition, bool) {
	m := o.target.machine
	if !m.DeletionTimestamp.IsZero() || v1beta1.IsPaused(m.Annotations) {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, ObservedGeneration: m.Generation, Message: o.health.message}
	switch {
	case o.health.state == stateHealthy:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonHealthy, healthyMessage(o.target)
	case o.health.state == stateInFlight || o.action == actRemediate:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRemediating
		c.Message += "; remediating: " + remedy(o)
	case o.health.state == stateWaiting:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonWaitingForNode
	default:
		c.Status, c.Reason = metav1.ConditionFalse, o.blocked
		c.Message += "; not remediated: " + o.why
	}
	return c, true
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
		st.RemediationsAllowed = ev.remediationsAllowed()
		st.Targets = make([]string, len(ev.outcomes))
		for i := range ev.outcomes {
			st.Targets[i] = ev.outcomes[i].target.machine.Name
		}
		if len(st.Targets) == 0 {
			st.Targets = nil
		}
		c.Status, c.Reason, c.Message = remediationAllowed(ev)
	default:
		return st
	}
	setCondition(&st.Conditions, c, s.now)
	return st
}

// remediationAllowed is the RemediationAllowed condition for ev, its message giving the counts.
func remediationAllowed(ev *evaluation) (metav1.ConditionStatus, string, string) {
	if !ev.allowed {
		reason, msg := ev.limits.denial(ev.unhealthy, ev.total)
		return metav1.ConditionFalse, reason, msg
	}
	msg := fmt.Sprintf("%d of %d targets are unhealthy, within %s", ev.unhealthy, ev.total, ev.limits.text)
	if ev.limits.maxInFlightText != "" {
		msg += fmt.Sprintf("; %d remediations in progress (%s)", ev.inFlight+ev.started, ev.limits.maxInFlightText)
	}
	return metav1.ConditionTrue, ReasonWithinLimits, msg
}

// setCondition sets c in conds, its transition time now when its status changes.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(conds, c)
}
