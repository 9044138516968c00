package machine

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func readyNode(status corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady", Message: "ok"}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
		},
	}
}

func TestComputeStatus(t *testing.T) {
	linked := &v1beta1.NodeReference{Kind: "Node", Name: "n1"}
	tests := map[string]struct {
		machine             v1beta1.Machine
		scope               scope
		phase               v1beta1.MachinePhase
		ready               string // "Status/Reason"
		instance            string // "Status/Reason"
		message             string // a substring of some condition's message, if set
		failure             bool
		noDeletingCondition bool
	}{
		"a new machine moves to Provisioning before the instance is created": {
			scope: scope{startProvisioning: true},
			phase: v1beta1.MachinePhaseProvisioning, ready: "False/WaitingForNode", instance: "False/Provisioning",
		},
		"a transient provider error is reported and the phase stays Provisioning": {
			machine: v1beta1.Machine{Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioning}},
			scope:   scope{providerErr: errors.New("quota API timed out")},
			phase:   v1beta1.MachinePhaseProvisioning, instance: "False/ProviderError", message: "quota API timed out",
		},
		"a missing MachineClass says which one": {
			scope: scope{classMissing: "MachineClass ns/big does not exist"},
			phase: v1beta1.MachinePhasePending, instance: "False/MachineClassNotFound", message: "ns/big",
		},
		"an observed providerID makes the machine Provisioned": {
			machine: v1beta1.Machine{Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioning}},
			scope:   scope{observed: &v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}}},
			phase:   v1beta1.MachinePhaseProvisioned, instance: "True/InstanceExists", ready: "False/WaitingForNode",
		},
		"no Node while the node linker cannot see the Nodes: Provisioned, readiness Unknown": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{
				Phase: v1beta1.MachinePhaseProvisioned,
				Conditions: []metav1.Condition{{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionUnknown, Reason: nodelink.ReasonNodesUnreachable,
					Message: "the Node side's API server https://workload:6443 has not answered since 2026-11-30T11:00:00Z (connection refused)"}},
			}},
			phase: v1beta1.MachinePhaseProvisioned, ready: "Unknown/NodesUnreachable", message: "(NodeLinked: the Node side's API server https://workload:6443 has not answered",
		},
		"no Node and the node linker sees none: waiting for it": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{
				Phase:      v1beta1.MachinePhaseProvisioned,
				Conditions: []metav1.Condition{{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionFalse, Reason: nodelink.ReasonWaitingForNode}},
			}},
			phase: v1beta1.MachinePhaseProvisioned, ready: "False/WaitingForNode",
		},
		"a linked Ready Node makes it Running": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioned, NodeRef: linked}},
			scope:   scope{node: readyNode(corev1.ConditionTrue)},
			phase:   v1beta1.MachinePhaseRunning, ready: "True/NodeReady",
		},
		"a linked Node that is not Ready yet keeps it Provisioned": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioned, NodeRef: linked}},
			scope:   scope{node: readyNode(corev1.ConditionFalse)},
			phase:   v1beta1.MachinePhaseProvisioned, ready: "False/NodeNotReady",
		},
		"a Running machine whose Node goes NotReady stays Running and says so in Ready": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseRunning, NodeRef: linked}},
			scope:   scope{node: readyNode(corev1.ConditionUnknown)},
			phase:   v1beta1.MachinePhaseRunning, ready: "False/NodeNotReady", message: "Ready=Unknown",
		},
		"a Node that disappeared is reported": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseRunning, NodeRef: linked}},
			scope:   scope{nodeMissing: true},
			phase:   v1beta1.MachinePhaseRunning, ready: "False/NodeNotFound", message: "Node n1 no longer exists",
		},
		"a Node linked in another cluster makes it Running with readiness Unknown": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioned, NodeRef: linked}},
			scope:   scope{nodeElsewhere: true},
			phase:   v1beta1.MachinePhaseRunning, ready: "Unknown/NodeInOtherCluster", message: "linked in another cluster",
		},
		"an invalid configuration fails the machine with the provider's message": {
			machine: v1beta1.Machine{Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioning}},
			scope:   scope{failure: &failure{reason: v1beta1.InvalidConfigurationFailure, message: "instanceType huge is not offered"}},
			phase:   v1beta1.MachinePhaseFailed, ready: "False/Failed", instance: "False/InvalidConfiguration", message: "huge", failure: true,
		},
		"a failed machine whose spec changed is provisioned again and its failure cleared": {
			machine: v1beta1.Machine{Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseFailed,
				FailureReason: ptr.To(v1beta1.InvalidConfigurationFailure), FailureMessage: ptr.To("bad")}},
			scope: scope{startProvisioning: true},
			phase: v1beta1.MachinePhaseProvisioning, instance: "False/Provisioning",
		},
		"a vanished instance fails a Running machine": {
			machine: v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseRunning, NodeRef: linked}},
			scope:   scope{failure: &failure{reason: v1beta1.InstanceMissingFailure, message: "instance sim:///a no longer exists"}},
			phase:   v1beta1.MachinePhaseFailed, instance: "False/InstanceMissing", failure: true,
		},
		"a deleting machine names the step it waits on": {
			machine: v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.NewTime(now))},
				Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseRunning, NodeRef: linked}},
			scope: scope{node: readyNode(corev1.ConditionTrue), deletion: &deletionState{step: ReasonDrainingNode, message: "1 pod remaining",
				drain: &drainState{reason: ReasonDraining, message: "1 pod remaining"}}},
			phase: v1beta1.MachinePhaseDeleting, ready: "False/Deleting", message: "1 pod remaining",
		},
		"a deleting machine whose pipeline has not started a step writes no Deleting condition": {
			machine: v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.NewTime(now))}},
			scope:   scope{deletion: &deletionState{}},
			phase:   v1beta1.MachinePhaseDeleting, noDeletingCondition: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := tc.scope
			s.machine, s.now = &tc.machine, now
			st := computeStatus(&s)
			if st.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tc.phase)
			}
			check := func(typ, want string) {
				if want == "" {
					return
				}
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if got := string(c.Status) + "/" + c.Reason; got != want {
					t.Errorf("%s = %s (%s), want %s", typ, got, c.Message, want)
				}
			}
			check(v1beta1.ReadyCondition, tc.ready)
			check(v1beta1.InstanceProvisionedCondition, tc.instance)
			if tc.message != "" {
				found := false
				for _, c := range st.Conditions {
					found = found || strings.Contains(c.Message, tc.message)
				}
				if !found {
					t.Errorf("no condition message contains %q: %+v", tc.message, st.Conditions)
				}
			}
			if (st.FailureReason != nil) != tc.failure {
				t.Errorf("failureReason = %v, want set: %v", st.FailureReason, tc.failure)
			}
			if tc.noDeletingCondition && meta.FindStatusCondition(st.Conditions, v1beta1.DeletingCondition) != nil {
				t.Errorf("a Deleting condition without a reason would be rejected by the API server")
			}
		})
	}
}

func TestProvisionedTimeIsSetOnceAndNeverMoves(t *testing.T) {
	first := metav1.NewTime(now.Add(-time.Hour))
	m := &v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///a"}, Status: v1beta1.MachineStatus{ProvisionedTime: &first}}
	st := computeStatus(&scope{machine: m, now: now})
	if !st.ProvisionedTime.Equal(&first) {
		t.Fatalf("provisionedTime moved from %s to %s: the node startup timeout would reset", first, st.ProvisionedTime)
	}
	fresh := &v1beta1.Machine{}
	st = computeStatus(&scope{machine: fresh, now: now, observed: &v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderID: "sim:///b"}}})
	if st.ProvisionedTime == nil || !st.ProvisionedTime.Time.Equal(now) {
		t.Fatalf("provisionedTime = %v, want %s when the instance is first seen", st.ProvisionedTime, now)
	}
}
