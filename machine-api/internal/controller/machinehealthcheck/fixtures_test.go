package machinehealthcheck

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// now is the evaluation time of every table test.
var now = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// healthyTarget is a Running Machine, controlled by MachineSet ms, whose Node has been Ready for an hour.
func healthyTarget(name string, opts ...func(*target)) target {
	t := target{
		machine: &v1beta1.Machine{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
				CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: v1beta1.GroupVersion.String(), Kind: "MachineSet", Name: "ms", UID: "uid-ms", Controller: ptr.To(true),
				}},
			},
			Status: v1beta1.MachineStatus{
				Phase:           v1beta1.MachinePhaseRunning,
				ProvisionedTime: ptr.To(metav1.NewTime(now.Add(-time.Hour))),
				NodeRef:         &v1beta1.NodeReference{Kind: "Node", Name: "node-" + name, UID: types.UID("uid-node-" + name)},
			},
		},
		node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-" + name, UID: types.UID("uid-node-" + name)},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour)),
			}}},
		},
	}
	for _, o := range opts {
		o(&t)
	}
	return t
}

// nodeCondition sets the Node's condition typ to status, transitioned ago.
func nodeCondition(typ corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) func(*target) {
	return func(t *target) {
		c := corev1.NodeCondition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
		for i := range t.node.Status.Conditions {
			if t.node.Status.Conditions[i].Type == typ {
				t.node.Status.Conditions[i] = c
				return
			}
		}
		t.node.Status.Conditions = append(t.node.Status.Conditions, c)
	}
}

func notReadyFor(ago time.Duration) func(*target) {
	return nodeCondition(corev1.NodeReady, corev1.ConditionFalse, ago)
}

// noNodeProvisionedAgo: provisioned ago, no Node yet.
func noNodeProvisionedAgo(ago time.Duration) func(*target) {
	return func(t *target) {
		t.node = nil
		t.machine.Status.NodeRef = nil
		t.machine.Status.Phase = v1beta1.MachinePhaseProvisioned
		t.machine.Status.ProvisionedTime = ptr.To(metav1.NewTime(now.Add(-ago)))
	}
}

// notProvisionedCreatedAgo: created ago, no instance yet.
func notProvisionedCreatedAgo(ago time.Duration) func(*target) {
	return func(t *target) {
		t.node = nil
		t.machine.Status = v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioning}
		t.machine.CreationTimestamp = metav1.NewTime(now.Add(-ago))
	}
}

func nodeGone(t *target) { t.node, t.nodeMissing = nil, true }

// linkCondition sets the NodeLinked condition the node linker writes.
func linkCondition(status metav1.ConditionStatus, reason string) func(*target) {
	return func(t *target) {
		t.machine.Status.Conditions = append(t.machine.Status.Conditions,
			metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: status, Reason: reason})
	}
}

// nodesOutOfSight sets the NodeLinked condition a remote node linker writes on a Machine without a
// Node while its workload cluster's API server is unreachable.
func nodesOutOfSight(t *target) {
	t.machine.Status.Conditions = append(t.machine.Status.Conditions, metav1.Condition{
		Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionUnknown, Reason: nodelink.ReasonNodesUnreachable,
		Message: "the Node side's API server https://workload:6443 has not answered since 2026-05-04T11:50:00Z (connection refused): " +
			"a Node that registered meanwhile cannot be seen; waiting for it to answer",
	})
}

func failed(t *target) {
	t.machine.Status.Phase = v1beta1.MachinePhaseFailed
	t.machine.Status.FailureMessage = ptr.To("instance vanished")
}

func annotated(key string) func(*target) {
	return func(t *target) {
		if t.machine.Annotations == nil {
			t.machine.Annotations = map[string]string{}
		}
		t.machine.Annotations[key] = ""
	}
}

func deleting(t *target) { t.machine.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Minute))) }

// remediatedByUs: this controller asked the Machine's MachineSet to replace it (its verdict,
// OwnerRemediated=False), and the set has not deleted it yet.
func remediatedByUs(t *target) {
	t.machine.Status.Conditions = append(t.machine.Status.Conditions,
		metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: ReasonRemediating,
			Message: "Node node-x has had Ready=False since 2026-05-04T11:00:00Z, longer than 1m0s; remediating: MachineSet ms is asked to replace it"},
		metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: v1beta1.RemediationRequestedReason,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))})
}

// replacedByItsSet: remediatedByUs, and its set deleted it.
func replacedByItsSet(t *target) {
	remediatedByUs(t)
	deleting(t)
}

func withRequest(t *target) { t.request = true }

func unowned(t *target) { t.machine.OwnerReferences = nil }

func ownedBy(apiVersion, kind string) func(*target) {
	return func(t *target) {
		t.machine.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "x", UID: "uid-x", Controller: ptr.To(true)}}
	}
}

// ownCondition sets the Machine's own condition typ to status, transitioned ago.
func ownCondition(typ string, status metav1.ConditionStatus, ago time.Duration) func(*target) {
	return func(t *target) {
		t.machine.Status.Conditions = append(t.machine.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: "Observed", LastTransitionTime: metav1.NewTime(now.Add(-ago)),
		})
	}
}

// inLineage: the Machine took over lineage l after retries remediations, the last one ago.
func inLineage(l string, retries int, ago time.Duration) func(*target) {
	return func(t *target) {
		if t.machine.Annotations == nil {
			t.machine.Annotations = map[string]string{}
		}
		t.machine.Annotations[v1beta1.LineageAnnotation] = l
		t.machine.Annotations[v1beta1.LineageRetriesAnnotation] = fmt.Sprint(retries)
		t.machine.Annotations[v1beta1.LineageRemediatedAtAnnotation] = now.Add(-ago).Format(time.RFC3339)
	}
}

// linkedSince: the Machine's Node has been linked since ago (the node linker's NodeLinked=True).
func linkedSince(ago time.Duration) func(*target) {
	return func(t *target) {
		t.machine.Status.Conditions = append(t.machine.Status.Conditions, metav1.Condition{
			Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionTrue, Reason: "NodeLinked",
			LastTransitionTime: metav1.NewTime(now.Add(-ago)),
		})
	}
}
