package machinehealthcheck

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/steps"
)

// rules are the tests of one health check, taken from its spec.
type rules struct {
	conditions        []v1beta1.UnhealthyCondition // on the Node
	machineConditions []v1beta1.UnhealthyCondition // on the Machine
	startupTimeout    time.Duration                // 0: a Machine may wait for its Node forever
	// resumedAt, when set, is when remediation resumed after the check's short-circuit: no
	// timeout of a condition rule or of the startup counts from before it (see resumeOf).
	resumedAt time.Time
}

func rulesOf(spec *v1beta1.MachineHealthCheckSpec) rules {
	startup := v1beta1.DefaultNodeStartupTimeoutSeconds
	if spec.NodeStartupTimeoutSeconds != nil {
		startup = *spec.NodeStartupTimeoutSeconds
	}
	return rules{conditions: spec.UnhealthyConditions, machineConditions: spec.UnhealthyMachineConditions, startupTimeout: seconds(startup)}
}

// target is one Machine a health check selects, with what the cache holds about it.
type target struct {
	machine     *v1beta1.Machine // shared with the cache: never modified
	node        *corev1.Node     // the linked Node; nil when none is linked or it is gone
	nodeMissing bool             // status.nodeRef names a Node that no longer exists
	request     bool             // a live external remediation request exists for it
}

// state is where a target stands.
type state uint8

const (
	// stateHealthy: it has a Node and passes every rule.
	stateHealthy state = iota
	// stateSuspect: it has a Node and fails a condition rule (of the Node or the Machine) whose
	// timeout has not passed yet. Counted against maxUnhealthy, never remediated.
	stateSuspect
	// stateWaiting: no Node yet, within the startup timeout (or the timeout is disabled). Counted
	// neither healthy nor failing: a scale-up is not an outage.
	stateWaiting
	// stateUnhealthy: it fails a rule and no remediation of it is in progress.
	stateUnhealthy
	// stateInFlight: its remediation is in progress: its MachineSet was asked to replace it
	// (OwnerRemediated=False), or it has a live external request while not healthy. Counted as
	// unhealthy and as in flight.
	stateInFlight
	// stateDeleting: deleted by someone else; counted neither healthy nor unhealthy.
	stateDeleting
)

// health is the verdict on one target.
type health struct {
	state   state
	cause   string        // why it is unhealthy or suspect (a Cause constant); empty when it is neither
	message string        // what was observed, stable across evaluations (no durations that tick); "" when healthy
	recheck time.Duration // > 0: a timeout expires then and the verdict may change
	since   time.Time     // when it began failing, for an unhealthy one (see lineage.Healthy)
	// resumed: a timeout of this target counts from when remediation resumed after the check's
	// short-circuit, not from when it began failing (see rules.resumedAt).
	resumed bool
}

// check judges one target at time now. It is pure: everything it needs is in t.
func check(t *target, r *rules, now time.Time) health {
	m := t.machine
	if !m.DeletionTimestamp.IsZero() {
		if t.request || lineage.Requested(m) != nil {
			return health{state: stateInFlight, message: "the Machine is being deleted to remediate it"}
		}
		return health{state: stateDeleting, message: "the Machine is being deleted"}
	}
	if c := lineage.Requested(m); c != nil && machineSetOf(m) != "" {
		return health{state: stateInFlight, message: fmt.Sprintf("remediation was requested from MachineSet %s at %s",
			machineSetOf(m), c.LastTransitionTime.UTC().Format(time.RFC3339))}
	}
	h := judge(t, r, now)
	if t.request && h.state != stateHealthy {
		h.state = stateInFlight
	}
	return h
}

// judge applies the rules in order of certainty: an explicit request, a failed Machine, a vanished
// Node, a Machine condition that held for its timeout, a Node that never came, then the
// conditions of the Node and of the Machine (unhealthy when one held for its timeout, suspect
// while one holds that has not yet).
func judge(t *target, r *rules, now time.Time) health {
	m := t.machine
	if _, ok := m.Annotations[v1beta1.RemediateMachineAnnotation]; ok {
		return unhealthy(CauseRemediationRequested, now, "the Machine has the annotation %s", v1beta1.RemediateMachineAnnotation)
	}
	if m.Status.Phase == v1beta1.MachinePhaseFailed {
		msg := "the Machine failed"
		if m.Status.FailureMessage != nil {
			msg += ": " + *m.Status.FailureMessage
		}
		return unhealthy(CauseMachineFailed, now, "%s", msg)
	}
	var elsewhere *health // the Node is linked in another cluster: only the Machine's rules apply
	if ref := m.Status.NodeRef; ref != nil {
		// The node linker that sees the Node is the authority on whether it still exists: a Node
		// of a workload cluster is linked by cluster-manager and is never in this manager's cache.
		link := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition)
		switch {
		case link != nil && link.Status == metav1.ConditionFalse && link.Reason == nodelink.ReasonNodeDeleted:
			return unhealthy(CauseNodeNotFound, link.LastTransitionTime.Time, "Node %s no longer exists", ref.Name)
		case t.nodeMissing && link != nil && link.Status == metav1.ConditionTrue:
			elsewhere = &health{state: stateHealthy, message: fmt.Sprintf(
				"Node %s is linked in another cluster: its conditions are not visible here, only a failed Machine, a deleted Node or the Machine's own conditions are remediated", ref.Name)}
		case t.nodeMissing:
			return unhealthy(CauseNodeNotFound, now, "Node %s no longer exists", ref.Name)
		}
	}
	own := conditionRules(machineConditions(m.Status.Conditions), r.machineConditions, "Machine", m.Name, CauseUnhealthyMachineCondition, r.resumedAt, now)
	switch {
	case own.state == stateUnhealthy:
		return own
	case updating(m, r, now) != nil:
		return *updating(m, r, now)
	case elsewhere != nil:
		if own.state == stateSuspect {
			return own
		}
		return *elsewhere
	case t.node == nil:
		// Waiting for a Node is not suspect, whatever the Machine's conditions say meanwhile.
		w := waitForNode(m, r, now)
		if w.state == stateWaiting {
			w.recheck = steps.SoonestAfter(w.recheck, own.recheck)
		}
		return w
	}
	node := conditionRules(nodeConditions(t.node.Status.Conditions), r.conditions, "Node", t.node.Name, CauseUnhealthyNodeCondition, r.resumedAt, now)
	switch {
	case node.state == stateUnhealthy:
		return node
	case node.state == stateSuspect && (own.state != stateSuspect || node.recheck <= own.recheck):
		node.recheck = steps.SoonestAfter(node.recheck, own.recheck)
		return node
	case own.state == stateSuspect:
		own.recheck = steps.SoonestAfter(own.recheck, node.recheck)
		return own
	}
	return health{state: stateHealthy} // its message is made only when written (see healthyMessage)
}

// updating judges a Machine whose instance is being updated in place (Updating=True): drained and
// rebooted on purpose, it is waiting, like a Machine for its first Node, neither healthy nor
// failing, for at most nodeStartupTimeoutSeconds from the start of the update; nil when it is not
// updating or past that (then the rules apply as usual).
func updating(m *v1beta1.Machine, r *rules, now time.Time) *health {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.UpdatingCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	if r.startupTimeout == 0 {
		return &health{state: stateWaiting, message: "its instance is being updated in place (Updating=True): its Node is judged once the update ends"}
	}
	deadline := c.LastTransitionTime.Add(r.startupTimeout)
	if !now.Before(deadline) {
		return nil
	}
	return &health{state: stateWaiting, recheck: deadline.Sub(now), message: fmt.Sprintf(
		"its instance is being updated in place (Updating=True): its Node is judged once the update ends, or from %s (nodeStartupTimeoutSeconds after the update began)",
		deadline.UTC().Format(time.RFC3339))}
}

// waitForNode judges a Machine without a Node: waiting until nodeStartupTimeoutSeconds after
// provisioning (creation before it), unhealthy after. The timeout is not applied while the node
// linker reports that it cannot see the Nodes (a workload cluster's API server is unreachable):
// the Node may well have registered there. No recheck is due then: the linker's condition change
// brings the Machine back (machineChanged), and the usual deadline applies from then on.
func waitForNode(m *v1beta1.Machine, r *rules, now time.Time) health {
	if link := nodesUnreachable(m); link != nil {
		return health{state: stateWaiting, message: fmt.Sprintf(
			"its Nodes' API server is unreachable (%s: %s): nodeStartupTimeoutSeconds is not applied until it answers", link.Type, link.Message)}
	}
	if r.startupTimeout == 0 {
		return health{state: stateWaiting, message: "waiting for a Node (nodeStartupTimeoutSeconds is 0: no deadline)"}
	}
	start, since := m.CreationTimestamp.Time, "creation"
	if p := m.Status.ProvisionedTime; p != nil {
		start, since = p.Time, "provisioning"
	}
	resumed := start.Before(r.resumedAt)
	if resumed {
		start, since = r.resumedAt, "remediation resumed after the health check's short-circuit"
	}
	deadline := start.Add(r.startupTimeout)
	if !now.Before(deadline) {
		return unhealthy(CauseNodeStartupTimeout, deadline, "no Node %s after %s at %s (nodeStartupTimeoutSeconds)",
			r.startupTimeout, since, start.UTC().Format(time.RFC3339))
	}
	return health{
		state:   stateWaiting,
		message: fmt.Sprintf("waiting for a Node; remediated if none by %s (%s after %s)", deadline.UTC().Format(time.RFC3339), r.startupTimeout, since),
		recheck: deadline.Sub(now),
		resumed: resumed,
	}
}

// nodesUnreachable returns the Machine's NodeLinked condition when it says that no Node could be
// seen for it (Unknown/NodesUnreachable, only ever written while the Machine has no nodeRef), and
// nil otherwise.
func nodesUnreachable(m *v1beta1.Machine) *metav1.Condition {
	if m.Status.NodeRef != nil {
		return nil
	}
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != nodelink.ReasonNodesUnreachable {
		return nil
	}
	return c
}

// conditionList is the conditions of a Node or a Machine, as the rules read them (generic, so that
// judging thousands of targets copies nothing).
type conditionList interface {
	len() int
	at(i int) (typ, status string, since time.Time)
}

type nodeConditions []corev1.NodeCondition

func (c nodeConditions) len() int { return len(c) }
func (c nodeConditions) at(i int) (string, string, time.Time) {
	return string(c[i].Type), string(c[i].Status), c[i].LastTransitionTime.Time
}

type machineConditions []metav1.Condition

func (c machineConditions) len() int { return len(c) }
func (c machineConditions) at(i int) (string, string, time.Time) {
	return c[i].Type, string(c[i].Status), c[i].LastTransitionTime.Time
}

// conditionRules judges the conditions of one object (kind name, for messages) against rules: the
// object is unhealthy (cause) as soon as one rule has held for its timeout, suspect while one holds
// that has not (the soonest deadline names it and is the recheck), healthy otherwise. A timeout
// counts from the condition's lastTransitionTime, or from resumedAt when that is later (remediation
// resumed after a short-circuit: the outage's clock does not count). Rules are applied in their
// order; the first that timed out is the one reported.
func conditionRules[L conditionList](conds L, rules []v1beta1.UnhealthyCondition, kind, name, cause string, resumedAt, now time.Time) health {
	h := health{state: stateHealthy}
	for _, uc := range rules {
		for i := range conds.len() {
			typ, status, since := conds.at(i)
			if typ != uc.Type || status != uc.Status {
				continue
			}
			timeout := seconds(uc.TimeoutSeconds)
			from, resumed := since, ""
			if from.Before(resumedAt) {
				from, resumed = resumedAt, fmt.Sprintf(", counted from %s, when remediation resumed after the health check's short-circuit",
					resumedAt.UTC().Format(time.RFC3339))
			}
			deadline := from.Add(timeout)
			left := deadline.Sub(now)
			if left <= 0 {
				return unhealthy(cause, since, "%s %s has had %s=%s since %s, longer than %s%s",
					kind, name, typ, status, since.UTC().Format(time.RFC3339), timeout, resumed)
			}
			if h.state == stateSuspect && left >= h.recheck {
				continue
			}
			h = health{state: stateSuspect, cause: cause, recheck: left, resumed: resumed != "", message: fmt.Sprintf(
				"%s %s has had %s=%s since %s; unhealthy at %s unless it recovers (timeoutSeconds %d%s)",
				kind, name, typ, status, since.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339), uc.TimeoutSeconds, resumed)}
		}
	}
	return h
}

func unhealthy(cause string, since time.Time, format string, args ...any) health {
	return health{state: stateUnhealthy, cause: cause, since: since, message: fmt.Sprintf(format, args...)}
}

func seconds(s int32) time.Duration { return time.Duration(s) * time.Second }
