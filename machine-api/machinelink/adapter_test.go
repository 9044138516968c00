package machinelink_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"machineapi.dev/nodelink"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinelink"
)

// TestAdapter protects which Machine fields a link is read from and recorded in.
func TestAdapter(t *testing.T) {
	a := machinelink.Adapter{}
	m := a.New()
	m.Spec.ProviderID = "sim:///i-1"
	m.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: corev1.NodeExternalIP, Address: "1.2.3.4"},
		{Type: corev1.NodeInternalIP, Address: ""},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
	}
	m.Spec.Metadata.Labels = map[string]string{"pool": "a"}
	m.Spec.Taints = []v1beta1.MachineTaint{{Key: "k", Effect: corev1.TaintEffectNoSchedule},
		{Key: "warming-up", Effect: corev1.TaintEffectNoSchedule, Propagation: v1beta1.TaintPropagationOnInitialization}}

	if got := a.ProviderID(m); got != "sim:///i-1" {
		t.Errorf("ProviderID = %q", got)
	}
	if got := a.InternalIPs(m); !slices.Equal(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("InternalIPs = %q, want the non-empty InternalIP addresses", got)
	}
	if md := a.NodeMetadata(m); md.Labels["pool"] != "a" || len(md.Taints) != 1 || md.Taints[0].Key != "k" ||
		len(md.InitializationTaints) != 1 || md.InitializationTaints[0].Key != "warming-up" {
		t.Errorf("NodeMetadata = %+v, want spec.metadata, and spec.taints split by propagation", md)
	}
	if a.NodeRef(m) != nil {
		t.Errorf("NodeRef of an unlinked Machine = %+v, want nil", a.NodeRef(m))
	}
	a.SetNodeRef(m, nodelink.NodeRef{Name: "n1", UID: "u1"})
	if m.Status.NodeRef == nil || *m.Status.NodeRef != (v1beta1.NodeReference{Kind: "Node", Name: "n1", UID: "u1"}) {
		t.Errorf("status.nodeRef = %+v, want Node n1 (u1)", m.Status.NodeRef)
	}
	if got := a.NodeRef(m); got == nil || *got != (nodelink.NodeRef{Name: "n1", UID: "u1"}) {
		t.Errorf("NodeRef = %+v, want n1 (u1)", got)
	}
	a.SetLinkCondition(m, metav1.Condition{Type: nodelink.ConditionNodeLinked, Status: metav1.ConditionTrue, Reason: nodelink.ReasonLinked})
	if c := a.LinkCondition(m); c == nil || c.Reason != nodelink.ReasonLinked {
		t.Errorf("LinkCondition = %+v, want the one set", c)
	}
}

// TestLinkerOptions protects what every linker of Machines shares, whatever the caller sets.
func TestLinkerOptions(t *testing.T) {
	o := machinelink.LinkerOptions(nodelink.Options{Name: "nodelink-ns-c", AnnotationPrefix: "other.example.com"})
	if o.Name != "nodelink-ns-c" || o.AnnotationPrefix != v1beta1.GroupVersion.Group {
		t.Errorf("LinkerOptions = name %q, prefix %q; want the caller's name and %q", o.Name, o.AnnotationPrefix, v1beta1.GroupVersion.Group)
	}
	if o.Paused == nil || o.Paused(&v1beta1.Machine{}) {
		t.Fatalf("LinkerOptions.Paused must report exactly the paused Machines")
	}
	for _, key := range []string{v1beta1.PausedAnnotation, v1beta1.ClusterAPIPausedAnnotation} {
		paused := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{key: ""}}}
		if !o.Paused(paused) {
			t.Errorf("LinkerOptions.Paused must report the Machines with %s", key)
		}
	}
}

// TestLinkApplyConfiguration protects what the node linker's apply owns on a Machine: its
// status.nodeRef and NodeLinked condition, nothing the machine controller writes.
func TestLinkApplyConfiguration(t *testing.T) {
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m1", UID: "m-uid"}}
	cond := metav1.Condition{Type: nodelink.ConditionNodeLinked, Status: metav1.ConditionTrue, Reason: nodelink.ReasonLinked,
		Message: "linked to Node n1", ObservedGeneration: 2, LastTransitionTime: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for name, tc := range map[string]struct {
		ref  *nodelink.NodeRef
		want string
	}{
		"linked": {ref: &nodelink.NodeRef{Name: "n1", UID: "n-uid"},
			want: `{"kind":"Machine","apiVersion":"machine.machineapi.dev/v1beta1","metadata":{"name":"m1","namespace":"ns","uid":"m-uid"},` +
				`"status":{"nodeRef":{"kind":"Node","name":"n1","uid":"n-uid"},"conditions":[{"type":"NodeLinked","status":"True",` +
				`"observedGeneration":2,"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"Linked","message":"linked to Node n1"}]}}`},
		"no node reference yet": {
			want: `{"kind":"Machine","apiVersion":"machine.machineapi.dev/v1beta1","metadata":{"name":"m1","namespace":"ns","uid":"m-uid"},` +
				`"status":{"conditions":[{"type":"NodeLinked","status":"True",` +
				`"observedGeneration":2,"lastTransitionTime":"2026-01-02T03:04:05Z","reason":"Linked","message":"linked to Node n1"}]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(machinelink.Adapter{}.LinkApplyConfiguration(m, tc.ref, cond))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("apply configuration\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestInitializationTaint protects the one name of the initialization taint: the one the simulated
// kubelet and providers register Nodes with (v1beta1) is the one the node linker removes.
func TestInitializationTaint(t *testing.T) {
	if v1beta1.NodeUninitializedTaintKey != nodelink.DefaultInitializationTaintKey {
		t.Errorf("v1beta1.NodeUninitializedTaintKey %q, nodelink.DefaultInitializationTaintKey %q: they must be the same",
			v1beta1.NodeUninitializedTaintKey, nodelink.DefaultInitializationTaintKey)
	}
}
