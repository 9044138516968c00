package machinehealthcheck

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestCheck protects the health rules: which Machines are unhealthy, which are suspect (failing
// a rule within its timeout) and which merely wait for their Node, why, and when a verdict can next
// change without an event (the requeue).
func TestCheck(t *testing.T) {
	r := rules{
		conditions: []v1beta1.UnhealthyCondition{
			{Type: "Ready", Status: "False", TimeoutSeconds: 300},
			{Type: "Ready", Status: "Unknown", TimeoutSeconds: 300},
			{Type: "DiskPressure", Status: "True", TimeoutSeconds: 60},
		},
		machineConditions: []v1beta1.UnhealthyCondition{
			{Type: "InstanceHealthy", Status: "False", TimeoutSeconds: 120},
		},
		startupTimeout: 600 * time.Second,
	}
	tests := map[string]struct {
		target  target
		rules   *rules
		state   state
		cause   string
		recheck time.Duration
		message string // a substring of the message, when set
	}{
		"a Ready Node is healthy and needs no timer": {
			target: healthyTarget("a"), state: stateHealthy,
		},
		"NotReady for less than the timeout is suspect until the timeout expires": {
			target: healthyTarget("a", notReadyFor(100*time.Second)), state: stateSuspect, cause: CauseUnhealthyNodeCondition,
			recheck: 200 * time.Second,
			message: "Node node-a has had Ready=False since 2026-05-04T11:58:20Z; unhealthy at 2026-05-04T12:03:20Z unless it recovers (timeoutSeconds 300)",
		},
		"NotReady for exactly the timeout is unhealthy": {
			target: healthyTarget("a", notReadyFor(300*time.Second)), state: stateUnhealthy, cause: CauseUnhealthyNodeCondition,
			message: "Node node-a has had Ready=False since 2026-05-04T11:55:00Z, longer than 5m0s",
		},
		"unreachable (Ready=Unknown) past the timeout is unhealthy": {
			target: healthyTarget("a", nodeCondition(corev1.NodeReady, corev1.ConditionUnknown, time.Hour)),
			state:  stateUnhealthy, cause: CauseUnhealthyNodeCondition,
		},
		"a condition status not listed does not count, however long it holds": {
			target: healthyTarget("a", nodeCondition(corev1.NodeMemoryPressure, corev1.ConditionTrue, time.Hour)), state: stateHealthy,
		},
		"two pending conditions: the sooner timeout is the recheck and names the suspicion": {
			target: healthyTarget("a", notReadyFor(100*time.Second), nodeCondition(corev1.NodeDiskPressure, corev1.ConditionTrue, 30*time.Second)),
			state:  stateSuspect, cause: CauseUnhealthyNodeCondition, recheck: 30 * time.Second, message: "DiskPressure=True",
		},
		"a Machine condition failing within its timeout is suspect": {
			target: healthyTarget("a", ownCondition("InstanceHealthy", metav1.ConditionFalse, 60*time.Second)),
			state:  stateSuspect, cause: CauseUnhealthyMachineCondition, recheck: 60 * time.Second,
			message: "Machine a has had InstanceHealthy=False since 2026-05-04T11:59:00Z; unhealthy at 2026-05-04T12:01:00Z",
		},
		"a Machine condition held for its timeout is unhealthy": {
			target: healthyTarget("a", ownCondition("InstanceHealthy", metav1.ConditionFalse, 120*time.Second)),
			state:  stateUnhealthy, cause: CauseUnhealthyMachineCondition,
			message: "Machine a has had InstanceHealthy=False since 2026-05-04T11:58:00Z, longer than 2m0s",
		},
		"a Machine condition with another status does not count": {
			target: healthyTarget("a", ownCondition("InstanceHealthy", metav1.ConditionTrue, time.Hour)), state: stateHealthy,
		},
		"a Node and a Machine suspicion: the sooner deadline is reported and is the recheck": {
			target: healthyTarget("a", notReadyFor(290*time.Second), ownCondition("InstanceHealthy", metav1.ConditionFalse, 60*time.Second)),
			state:  stateSuspect, cause: CauseUnhealthyNodeCondition, recheck: 10 * time.Second, message: "Ready=False",
		},
		"a Machine suspicion sooner than the Node's is the one reported": {
			target: healthyTarget("a", notReadyFor(10*time.Second), ownCondition("InstanceHealthy", metav1.ConditionFalse, 110*time.Second)),
			state:  stateSuspect, cause: CauseUnhealthyMachineCondition, recheck: 10 * time.Second, message: "InstanceHealthy=False",
		},
		"a timed-out Machine condition makes a Machine without a Node unhealthy": {
			target: healthyTarget("a", noNodeProvisionedAgo(time.Minute), ownCondition("InstanceHealthy", metav1.ConditionFalse, time.Hour)),
			state:  stateUnhealthy, cause: CauseUnhealthyMachineCondition,
		},
		"a Machine waiting for its Node is not suspect, whatever its conditions say within their timeout": {
			target: healthyTarget("a", noNodeProvisionedAgo(time.Minute), ownCondition("InstanceHealthy", metav1.ConditionFalse, 60*time.Second)),
			state:  stateWaiting, recheck: 60 * time.Second, message: "waiting for a Node",
		},
		"a Node linked in another cluster with a Machine condition failing is suspect": {
			target: healthyTarget("a", nodeGone, linkCondition(metav1.ConditionTrue, "Linked"), ownCondition("InstanceHealthy", metav1.ConditionFalse, time.Second)),
			state:  stateSuspect, cause: CauseUnhealthyMachineCondition, recheck: 119 * time.Second,
		},
		"a Node rebooted by an in-place update is not judged while the update runs": {
			target: healthyTarget("a", notReadyFor(400*time.Second), ownCondition(v1beta1.UpdatingCondition, metav1.ConditionTrue, 500*time.Second)),
			state:  stateWaiting, recheck: 100 * time.Second, message: "being updated in place",
		},
		"an in-place update running longer than the startup timeout: the Node is judged again": {
			target: healthyTarget("a", notReadyFor(400*time.Second), ownCondition(v1beta1.UpdatingCondition, metav1.ConditionTrue, 600*time.Second)),
			state:  stateUnhealthy, cause: CauseUnhealthyNodeCondition,
		},
		"an in-place update that ended: the Node is judged": {
			target: healthyTarget("a", notReadyFor(400*time.Second), ownCondition(v1beta1.UpdatingCondition, metav1.ConditionFalse, 5*time.Second)),
			state:  stateUnhealthy, cause: CauseUnhealthyNodeCondition,
		},
		"a Machine deleted by someone else is not suspect either": {
			target: healthyTarget("a", notReadyFor(time.Second), deleting), state: stateDeleting,
		},
		"a Node that is gone is unhealthy at once": {
			target: healthyTarget("a", nodeGone), state: stateUnhealthy, cause: CauseNodeNotFound, message: "Node node-a no longer exists",
		},
		"a Node linked in another cluster is not judged by this cache": {
			target: healthyTarget("a", nodeGone, linkCondition(metav1.ConditionTrue, "Linked")), state: stateHealthy,
			message: "Node node-a is linked in another cluster",
		},
		"a Node its linker reports deleted is unhealthy, wherever it lived": {
			target: healthyTarget("a", nodeGone, linkCondition(metav1.ConditionFalse, "NodeDeleted")), state: stateUnhealthy, cause: CauseNodeNotFound,
		},
		"phase Failed is unhealthy, with the failure message": {
			target: healthyTarget("a", failed), state: stateUnhealthy, cause: CauseMachineFailed, message: "instance vanished",
		},
		"the remediate-machine annotation makes a healthy Machine unhealthy": {
			target: healthyTarget("a", annotated(v1beta1.RemediateMachineAnnotation)), state: stateUnhealthy, cause: CauseRemediationRequested,
		},
		"no Node yet: the startup timeout runs from provisioning, not creation": {
			target: healthyTarget("a", noNodeProvisionedAgo(500*time.Second)), state: stateWaiting, recheck: 100 * time.Second,
			message: "remediated if none by 2026-05-04T12:01:40Z",
		},
		"no Node after the startup timeout is unhealthy": {
			target: healthyTarget("a", noNodeProvisionedAgo(601*time.Second)), state: stateUnhealthy, cause: CauseNodeStartupTimeout,
			message: "after provisioning",
		},
		"not provisioned yet: the startup timeout runs from creation": {
			target: healthyTarget("a", notProvisionedCreatedAgo(700*time.Second)), state: stateUnhealthy, cause: CauseNodeStartupTimeout,
			message: "after creation",
		},
		"no Node past the startup timeout while its Nodes' API server is unreachable is waiting, with no timer": {
			target: healthyTarget("a", noNodeProvisionedAgo(601*time.Second), nodesOutOfSight), state: stateWaiting,
			message: "its Nodes' API server is unreachable (NodeLinked: the Node side's API server https://workload:6443 has not answered since " +
				"2026-05-04T11:50:00Z (connection refused): a Node that registered meanwhile cannot be seen; waiting for it to answer): " +
				"nodeStartupTimeoutSeconds is not applied until it answers",
		},
		"no Node within the startup timeout while its Nodes' API server is unreachable needs no timer either": {
			target: healthyTarget("a", noNodeProvisionedAgo(time.Second), nodesOutOfSight), state: stateWaiting,
		},
		"no Node past the startup timeout once the linker sees the Nodes again is unhealthy": {
			target: healthyTarget("a", noNodeProvisionedAgo(601*time.Second), linkCondition(metav1.ConditionFalse, "WaitingForNode")),
			state:  stateUnhealthy, cause: CauseNodeStartupTimeout, message: "after provisioning",
		},
		"only the linker's NodesUnreachable stops the startup clock, not any Unknown link": {
			target: healthyTarget("a", noNodeProvisionedAgo(601*time.Second), linkCondition(metav1.ConditionUnknown, "SomethingElse")),
			state:  stateUnhealthy, cause: CauseNodeStartupTimeout,
		},
		"a startup timeout of 0 waits for the Node forever": {
			target: healthyTarget("a", noNodeProvisionedAgo(240*time.Hour)), rules: &rules{conditions: r.conditions},
			state: stateWaiting,
		},
		"a Machine whose set was asked to replace it is a remediation in flight": {
			target: healthyTarget("a", notReadyFor(time.Hour), remediatedByUs), state: stateInFlight,
		},
		"a Machine whose set was asked to replace it and deleted it is a remediation in flight": {
			target: healthyTarget("a", notReadyFor(time.Hour), replacedByItsSet), state: stateInFlight,
		},
		"a Machine asked to be replaced that no set owns any more is judged again": {
			target: healthyTarget("a", notReadyFor(time.Hour), remediatedByUs, unowned), state: stateUnhealthy, cause: CauseUnhealthyNodeCondition,
		},
		"after the short-circuit, a Node failing since before it is suspect for a full timeout from then": {
			target: healthyTarget("a", notReadyFor(time.Hour)), rules: &rules{conditions: r.conditions, startupTimeout: r.startupTimeout, resumedAt: now.Add(-100 * time.Second)},
			state: stateSuspect, cause: CauseUnhealthyNodeCondition, recheck: 200 * time.Second,
			message: "counted from 2026-05-04T11:58:20Z, when remediation resumed after the health check's short-circuit",
		},
		"after the short-circuit, a Node failing since before it is unhealthy a full timeout from then": {
			target: healthyTarget("a", notReadyFor(time.Hour)), rules: &rules{conditions: r.conditions, startupTimeout: r.startupTimeout, resumedAt: now.Add(-300 * time.Second)},
			state: stateUnhealthy, cause: CauseUnhealthyNodeCondition,
		},
		"after the short-circuit, a Node that failed after it keeps its own clock": {
			target: healthyTarget("a", notReadyFor(100*time.Second)), rules: &rules{conditions: r.conditions, startupTimeout: r.startupTimeout, resumedAt: now.Add(-200 * time.Second)},
			state: stateSuspect, cause: CauseUnhealthyNodeCondition, recheck: 200 * time.Second,
		},
		"after the short-circuit, a Machine still without a Node gets a full startup timeout from then": {
			target: healthyTarget("a", noNodeProvisionedAgo(time.Hour)), rules: &rules{conditions: r.conditions, startupTimeout: r.startupTimeout, resumedAt: now.Add(-100 * time.Second)},
			state: stateWaiting, recheck: 500 * time.Second, message: "after remediation resumed",
		},
		"a Machine deleted by someone else is neither healthy nor unhealthy": {
			target: healthyTarget("a", notReadyFor(time.Hour), deleting), state: stateDeleting,
		},
		"a deleting Machine with a live request is in flight": {
			target: healthyTarget("a", deleting, withRequest), state: stateInFlight,
		},
		"an unhealthy Machine with a live request is in flight, not remediated again": {
			target: healthyTarget("a", nodeGone, withRequest), state: stateInFlight, cause: CauseNodeNotFound,
		},
		"a Machine without a Node yet and with a live request is still in flight": {
			target: healthyTarget("a", noNodeProvisionedAgo(time.Second), withRequest), state: stateInFlight, recheck: 599 * time.Second,
		},
		"a healthy Machine with a live request is healthy (its request is cleaned up)": {
			target: healthyTarget("a", withRequest), state: stateHealthy,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rr := &r
			if tc.rules != nil {
				rr = tc.rules
			}
			h := check(&tc.target, rr, now)
			if h.state != tc.state || h.cause != tc.cause || h.recheck != tc.recheck {
				t.Errorf("check() = state %d cause %q recheck %s, want state %d cause %q recheck %s (message %q)",
					h.state, h.cause, h.recheck, tc.state, tc.cause, tc.recheck, h.message)
			}
			if !strings.Contains(h.message, tc.message) {
				t.Errorf("message %q does not contain %q", h.message, tc.message)
			}
		})
	}
}

// TestRulesOf protects the startup timeout default (600s) and the meaning of 0 (disabled).
func TestRulesOf(t *testing.T) {
	zero, five := int32(0), int32(5)
	tests := map[string]struct {
		set  *int32
		want time.Duration
	}{
		"unset means the default, 600s": {nil, 600 * time.Second},
		"0 disables":                    {&zero, 0},
		"5 is five seconds":             {&five, 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := rulesOf(&v1beta1.MachineHealthCheckSpec{NodeStartupTimeoutSeconds: tc.set}).startupTimeout; got != tc.want {
				t.Errorf("startupTimeout = %s, want %s", got, tc.want)
			}
		})
	}
}
