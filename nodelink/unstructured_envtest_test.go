package nodelink_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
)

var capiGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}

// capiPaths are the field paths of Cluster API's v1beta1 Machine, as cmd/nodelink's flags would
// give them.
func capiPaths() nodelink.FieldPaths {
	return nodelink.FieldPaths{
		ProviderID:    "spec.providerID",
		Addresses:     "status.addresses",
		NodeRef:       "status.nodeRef",
		NodeRefFields: []string{"apiVersion", "kind", "name", "uid"},
		Conditions:    "status.conditions",
		Labels:        "metadata.labels",
		LabelPrefixes: []string{"node-role.kubernetes.io/", "node-restriction.kubernetes.io/", "node.cluster.x-k8s.io/"},
	}
}

var _ = Describe("Linking Cluster API shaped Machines unchanged (unstructured adapter)", func() {
	It("links by providerID, writes a Cluster API nodeRef and condition, keeps Cluster API's conditions", func() {
		ns, name, node, id := newNamespace(), unique("capi"), unique("node"), "aws:///"+unique("i")
		create(builder.CAPIMachine(ns, name, "c1").WithProviderID(id).WithInternalIP(uniqueIP()).
			WithLabel("node-role.kubernetes.io/worker", "").WithLabel("not-for-the-node", "x").
			WithCondition("BootstrapReady", "False", "Warning", "WaitingForDataSecret").Build())
		create(builder.Node(node).WithProviderID(id).Build())

		get := func(g Gomega) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(capiGVK)
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
			return u
		}
		uid := string(getNode(node)(Default).UID)
		Eventually(func(g Gomega) map[string]any {
			ref, _, _ := unstructured.NestedMap(get(g).Object, "status", "nodeRef")
			return ref
		}).Should(Equal(map[string]any{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}))

		conds, _, _ := unstructured.NestedSlice(get(Default).Object, "status", "conditions")
		Expect(conds).To(ConsistOf(
			And(HaveKeyWithValue("type", "BootstrapReady"), HaveKeyWithValue("severity", "Warning"), HaveKeyWithValue("reason", "WaitingForDataSecret")),
			And(HaveKeyWithValue("type", nodelink.ConditionNodeLinked), HaveKeyWithValue("status", string(metav1.ConditionTrue)),
				HaveKeyWithValue("reason", nodelink.ReasonLinked), HaveKey("lastTransitionTime")),
		))
		Eventually(getNode(node)).Should(And(
			HaveField("Annotations", And(HaveKeyWithValue("cluster.x-k8s.io/machine", name), HaveKeyWithValue("cluster.x-k8s.io/cluster-namespace", ns),
				HaveKeyWithValue("cluster.x-k8s.io/labels-from-machine", "node-role.kubernetes.io/worker"))),
			HaveField("Labels", And(HaveKey("node-role.kubernetes.io/worker"), Not(HaveKey("not-for-the-node"))))))
	})

	It("reports a conflict by InternalIP with Cluster API's condition shape", func() {
		ns, m1, m2, node, ip := newNamespace(), unique("capi"), unique("capi"), unique("node"), uniqueIP()
		create(builder.CAPIMachine(ns, m1, "c1").WithInternalIP(ip).Build())
		create(builder.CAPIMachine(ns, m2, "c1").WithInternalIP(ip).Build())
		create(builder.Node(node).WithInternalIP(ip).Build())
		// Both Machines usually reach the linker before the Node, and both report
		// MultipleMachinesMatch. When the linker's cache shows the Node before the second Machine,
		// the first one seen is linked by its InternalIP (a link never flaps) and the other one is
		// refused (IPMatchRefused). Either way: at most one link, and a conflict reported on the
		// other Machine in Cluster API's condition shape.
		conflict := Or(Equal(nodelink.ReasonMultipleMachinesMatch), Equal(nodelink.ReasonIPMatchRefused))
		Eventually(func(g Gomega) {
			var linked, conflicts int
			for _, name := range []string{m1, m2} {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(capiGVK)
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				var c map[string]any
				for _, x := range conds {
					if m, ok := x.(map[string]any); ok && m["type"] == nodelink.ConditionNodeLinked {
						c = m
					}
				}
				g.Expect(c).NotTo(BeNil(), "machine %s has a NodeLinked condition", name)
				g.Expect(c).To(And(HaveKey("status"), HaveKey("reason"), HaveKey("message"), HaveKey("lastTransitionTime")))
				switch {
				case c["reason"] == nodelink.ReasonLinked:
					linked++
				default:
					g.Expect(c["reason"]).To(conflict, "machine %s", name)
					g.Expect(c["status"]).To(Equal("False"))
					conflicts++
				}
			}
			g.Expect(linked).To(BeNumerically("<=", 1), "the Node is linked to one Machine at most")
			g.Expect(conflicts).To(BeNumerically(">=", 1))
		}).Should(Succeed())
	})
})
