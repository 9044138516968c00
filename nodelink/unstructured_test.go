package nodelink

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var capiMachineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}

func capiPaths() FieldPaths {
	return FieldPaths{
		ProviderID: "spec.providerID", Addresses: "status.addresses", NodeRef: "status.nodeRef",
		NodeRefFields: []string{"apiVersion", "kind", "name", "uid"}, Conditions: "status.conditions",
		Labels: "metadata.labels", LabelPrefixes: []string{"node-role.kubernetes.io/"},
	}
}

func capiMachine() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": "m1", "namespace": "ns", "labels": map[string]any{
			"cluster.x-k8s.io/cluster-name": "c1", "node-role.kubernetes.io/worker": "",
		}},
		"spec": map[string]any{"clusterName": "c1", "providerID": "aws:///i-1"},
		"status": map[string]any{
			"addresses": []any{
				map[string]any{"type": "ExternalIP", "address": "1.2.3.4"},
				map[string]any{"type": "InternalIP", "address": "10.0.0.1"},
			},
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "False", "severity": "Warning", "reason": "Booting", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			},
		},
	}}
}

func TestUnstructuredAdapterReads(t *testing.T) {
	a, err := NewUnstructuredAdapter(capiMachineGVK, capiPaths())
	if err != nil {
		t.Fatal(err)
	}
	m := capiMachine()
	if got := a.ProviderID(m); got != "aws:///i-1" {
		t.Errorf("ProviderID() = %q", got)
	}
	if got := a.InternalIPs(m); len(got) != 1 || got[0] != "10.0.0.1" {
		t.Errorf("InternalIPs() = %v, want [10.0.0.1]", got)
	}
	if got := a.NodeMetadata(m); !equality.Semantic.DeepEqual(got, NodeMetadata{Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}) {
		t.Errorf("NodeMetadata() = %+v: only node-role labels must be copied", got)
	}
	if a.NodeRef(m) != nil || a.LinkCondition(m) != nil {
		t.Errorf("a fresh machine has no node reference or NodeLinked condition")
	}
	if l := a.NewList(); l.GetObjectKind().GroupVersionKind().Kind != "MachineList" {
		t.Errorf("NewList() kind = %s", l.GetObjectKind().GroupVersionKind().Kind)
	}
}

// TestUnstructuredAdapterWrites protects the other controllers' status: nodelink's writes change
// only its own entry of an atomic conditions list, and setting the same values twice changes
// nothing (so nothing is written).
func TestUnstructuredAdapterWrites(t *testing.T) {
	a, err := NewUnstructuredAdapter(capiMachineGVK, capiPaths())
	if err != nil {
		t.Fatal(err)
	}
	m := capiMachine()
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c := metav1.Condition{Type: ConditionNodeLinked, Status: metav1.ConditionTrue, Reason: ReasonLinked, Message: "linked", LastTransitionTime: at, ObservedGeneration: 3}
	a.SetNodeRef(m, NodeRef{Name: "n1", UID: "u1"})
	a.SetLinkCondition(m, c)

	wantRef := map[string]any{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}
	if ref, _, _ := unstructured.NestedMap(m.Object, "status", "nodeRef"); !equality.Semantic.DeepEqual(ref, wantRef) {
		t.Errorf("status.nodeRef = %v, want %v", ref, wantRef)
	}
	conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
	want := []any{
		map[string]any{"type": "Ready", "status": "False", "severity": "Warning", "reason": "Booting", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": ConditionNodeLinked, "status": "True", "reason": ReasonLinked, "message": "linked", "lastTransitionTime": "2026-01-02T03:04:05Z"},
	}
	if !equality.Semantic.DeepEqual(conds, want) {
		t.Errorf("status.conditions = %v\nwant %v", conds, want)
	}
	if got := a.LinkCondition(m); got == nil || got.Reason != ReasonLinked || !got.LastTransitionTime.Equal(&at) {
		t.Errorf("LinkCondition() = %+v", got)
	}

	again := m.DeepCopy()
	later := c
	later.LastTransitionTime = metav1.NewTime(at.Add(time.Hour))
	a.SetNodeRef(again, NodeRef{Name: "n1", UID: "u1"})
	a.SetLinkCondition(again, later)
	if !equality.Semantic.DeepEqual(again, m) {
		t.Errorf("setting the same status again changed the object:\n%v\nwas\n%v", again.Object, m.Object)
	}
}

// TestUnstructuredAdapterWritesUnknown: the standalone binary's adapter writes NodesUnreachable as
// status "Unknown" in the CRD's own condition list, and its transition time moves with the status
// only, like the typed adapters' meta.SetStatusCondition.
func TestUnstructuredAdapterWritesUnknown(t *testing.T) {
	a, err := NewUnstructuredAdapter(capiMachineGVK, capiPaths())
	if err != nil {
		t.Fatal(err)
	}
	m := capiMachine()
	t1 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	set := func(status metav1.ConditionStatus, reason string, at time.Time) map[string]any {
		a.SetLinkCondition(m, metav1.Condition{Type: ConditionNodeLinked, Status: status, Reason: reason, Message: reason + " message", LastTransitionTime: metav1.NewTime(at)})
		conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
		return conds[len(conds)-1].(map[string]any)
	}
	set(metav1.ConditionFalse, ReasonWaitingForNode, t1)
	want := map[string]any{"type": ConditionNodeLinked, "status": "Unknown", "reason": ReasonNodesUnreachable,
		"message": ReasonNodesUnreachable + " message", "lastTransitionTime": "2026-01-02T04:00:00Z"}
	if got := set(metav1.ConditionUnknown, ReasonNodesUnreachable, t1.Add(time.Hour)); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("NodeLinked = %v, want %v", got, want)
	}
	if got := set(metav1.ConditionUnknown, ReasonNodesUnreachable, t1.Add(2*time.Hour)); got["lastTransitionTime"] != want["lastTransitionTime"] {
		t.Errorf("lastTransitionTime moved to %v while the status stayed Unknown", got["lastTransitionTime"])
	}
	if got := a.LinkCondition(m); got == nil || got.Status != metav1.ConditionUnknown || got.Reason != ReasonNodesUnreachable {
		t.Errorf("LinkCondition() = %+v, want Unknown/%s", got, ReasonNodesUnreachable)
	}
}

func TestUnstructuredNodeRefFields(t *testing.T) {
	paths := capiPaths()
	paths.NodeRefFields = []string{"name"} // like Cluster API v1beta2's MachineNodeReference
	a, err := NewUnstructuredAdapter(capiMachineGVK, paths)
	if err != nil {
		t.Fatal(err)
	}
	m := capiMachine()
	a.SetNodeRef(m, NodeRef{Name: "n1", UID: "u1"})
	if ref, _, _ := unstructured.NestedMap(m.Object, "status", "nodeRef"); !equality.Semantic.DeepEqual(ref, map[string]any{"name": "n1"}) {
		t.Errorf("status.nodeRef = %v, want name only", ref)
	}
}

func TestUnstructuredTaints(t *testing.T) {
	a, err := NewUnstructuredAdapter(capiMachineGVK, FieldPaths{ProviderID: "spec.providerID", NodeRef: "status.nodeRef", Taints: "spec.taints"})
	if err != nil {
		t.Fatal(err)
	}
	m := capiMachine()
	_ = unstructured.SetNestedSlice(m.Object, []any{
		map[string]any{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
		map[string]any{"key": "no-effect"},
	}, "spec", "taints")
	want := []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if got := a.NodeMetadata(m).Taints; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Taints = %v, want %v", got, want)
	}
}

func TestNewUnstructuredAdapterRejects(t *testing.T) {
	tests := map[string]FieldPaths{
		"no node reference":            {ProviderID: "spec.providerID"},
		"nothing to match by":          {NodeRef: "status.nodeRef"},
		"empty path segment":           {ProviderID: "spec..providerID", NodeRef: "status.nodeRef"},
		"unknown node reference field": {ProviderID: "spec.providerID", NodeRef: "status.nodeRef", NodeRefFields: []string{"name", "namespace"}},
		"node reference without name":  {ProviderID: "spec.providerID", NodeRef: "status.nodeRef", NodeRefFields: []string{"uid"}},
	}
	for name, paths := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := NewUnstructuredAdapter(capiMachineGVK, paths); err == nil {
				t.Error("NewUnstructuredAdapter() succeeded, want an error")
			}
		})
	}
}

func TestParseGVK(t *testing.T) {
	tests := map[string]struct {
		in   string
		want schema.GroupVersionKind
		err  bool
	}{
		"group/version/kind": {in: "cluster.x-k8s.io/v1beta1/Machine", want: capiMachineGVK},
		"core group":         {in: "v1/Node", want: schema.GroupVersionKind{Version: "v1", Kind: "Node"}},
		"kind missing":       {in: "cluster.x-k8s.io/v1beta1/", err: true},
		"too short":          {in: "Machine", err: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseGVK(tc.in)
			if (err != nil) != tc.err || got != tc.want && !tc.err {
				t.Errorf("ParseGVK(%q) = %v, %v", tc.in, got, err)
			}
		})
	}
}
