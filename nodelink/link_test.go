package nodelink_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

const (
	annMachine       = "machine.machineapi.dev/machine"
	annNamespace     = "machine.machineapi.dev/cluster-namespace"
	annOwnedLabels   = "machine.machineapi.dev/labels-from-machine"
	annOwnedTaints   = "machine.machineapi.dev/taints-from-machine"
	annOwnedAnnotate = "machine.machineapi.dev/annotations-from-machine"
)

func create(obj client.Object) {
	GinkgoHelper()
	Expect(envtest.CreateWithStatus(ctx, k8sClient, obj)).To(Succeed())
}

var _ = Describe("Linking a Machine to its Node", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("links a Machine created before its Node, by providerID", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		create(builder.Machine(ns, name).WithProviderID(id).Build())
		Eventually(getMachine(ns, name)).Should(HaveField("Reason", nodelink.ReasonWaitingForNode))

		create(builder.Node(node).WithProviderID(id).Build())
		Eventually(getMachine(ns, name)).Should(Equal(machineState{
			NodeRef: node, Status: metav1.ConditionTrue, Reason: nodelink.ReasonLinked,
			Message: "linked to Node " + node + " by providerID " + id,
		}))
		Eventually(getNode(node)).Should(HaveField("Annotations", And(
			HaveKeyWithValue(annMachine, name), HaveKeyWithValue(annNamespace, ns))))
	})

	It("links a Node created before its Machine, by providerID", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		create(builder.Node(node).WithProviderID(id).Build())
		create(builder.Machine(ns, name).WithProviderID(id).Build())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
		Eventually(getNode(node)).Should(HaveField("Annotations", HaveKeyWithValue(annMachine, name)))
	})

	It("links a Machine that has only an InternalIP", func() {
		name, node, ip := unique("m"), unique("node"), uniqueIP()
		create(builder.Machine(ns, name).WithInternalIP(ip).Build())
		create(builder.Node(node).WithInternalIP(ip).Build())
		Eventually(getMachine(ns, name)).Should(Equal(machineState{
			NodeRef: node, Status: metav1.ConditionTrue, Reason: nodelink.ReasonLinked,
			Message: "linked to Node " + node + " by InternalIP " + ip,
		}))
	})

	It("links neither of two Machines with the same IP, reports the conflict on both, and links the survivor", func() {
		m1, m2, node, ip := unique("m"), unique("m"), unique("node"), uniqueIP()
		conflicts, links := counter("machineapi_nodelink_conflicts_total", nodelink.ReasonMultipleMachinesMatch)(), counter("machineapi_nodelink_links_total", "")()
		create(builder.Machine(ns, m1).WithInternalIP(ip).Build())
		create(builder.Machine(ns, m2).WithInternalIP(ip).Build())
		create(builder.Node(node).WithInternalIP(ip).Build())

		for _, m := range []string{m1, m2} {
			Eventually(getMachine(ns, m)).Should(And(
				HaveField("NodeRef", ""),
				HaveField("Status", metav1.ConditionFalse),
				HaveField("Reason", nodelink.ReasonMultipleMachinesMatch)))
			Eventually(eventReasons(ns, m)).Should(ContainElement(nodelink.ReasonMultipleMachinesMatch))
		}
		Consistently(getMachine(ns, m1)).Should(HaveField("Reason", nodelink.ReasonMultipleMachinesMatch))
		Expect(counter("machineapi_nodelink_conflicts_total", nodelink.ReasonMultipleMachinesMatch)()).To(Equal(conflicts+2),
			"one conflict counted per Machine, not per reconcile")
		Expect(getNode(node)(Default).Annotations).NotTo(HaveKey(annMachine))

		Expect(k8sClient.Delete(ctx, &testmachine.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: m2}})).To(Succeed())
		Eventually(getLink(ns, m1)).Should(Equal(linkedTo(node)))
		Eventually(counter("machineapi_nodelink_links_total", "")).Should(BeNumerically(">", links))
	})

	It("reports two Nodes with the Machine's providerID and links neither", func() {
		name, n1, n2, id := unique("m"), unique("node"), unique("node"), "sim:///"+unique("i")
		create(builder.Node(n1).WithProviderID(id).Build())
		create(builder.Node(n2).WithProviderID(id).Build())
		create(builder.Machine(ns, name).WithProviderID(id).Build())
		Eventually(getMachine(ns, name)).Should(HaveField("Reason", nodelink.ReasonMultipleNodesMatch))
		Consistently(getMachine(ns, name)).Should(HaveField("NodeRef", ""))
	})

	It("refuses a recycled IP whose Node is older than the Machine", func() {
		name, node, ip := unique("m"), unique("node"), uniqueIP()
		refusals := counter("machineapi_nodelink_ip_reuse_refusals_total", "")()
		create(builder.Node(node).WithInternalIP(ip).Build())
		// Creation timestamps have one-second resolution: make the Node visibly older. The API
		// server stamps them from its own clock, so there is no clock to step instead.
		time.Sleep(1100 * time.Millisecond) //nolint:forbidigo // the API server's clock must move past a second
		create(builder.Machine(ns, name).WithInternalIP(ip).Build())

		Eventually(getMachine(ns, name)).Should(And(
			HaveField("Reason", nodelink.ReasonIPMatchRefused),
			HaveField("Message", ContainSubstring("before this machine"))))
		Eventually(eventReasons(ns, name)).Should(ContainElement(nodelink.ReasonIPMatchRefused))
		Consistently(getMachine(ns, name)).Should(HaveField("NodeRef", ""))
		Expect(getNode(node)(Default).Annotations).NotTo(HaveKey(annMachine))
		Expect(counter("machineapi_nodelink_ip_reuse_refusals_total", "")()).To(Equal(refusals + 1))
	})

	It("refuses an IP match with a Node linked to another live Machine", func() {
		owner, late, node, ip := unique("m"), unique("m"), unique("node"), uniqueIP()
		id := "sim:///" + unique("i")
		create(builder.Machine(ns, owner).WithProviderID(id).Build())
		create(builder.Node(node).WithProviderID(id).WithInternalIP(ip).Build())
		Eventually(getLink(ns, owner)).Should(Equal(linkedTo(node)))

		create(builder.Machine(ns, late).WithInternalIP(ip).Build())
		Eventually(getMachine(ns, late)).Should(HaveField("Reason", nodelink.ReasonIPMatchRefused))
		Consistently(getLink(ns, owner)).Should(Equal(linkedTo(node)))
	})

	It("leaves a paused Machine and its Node alone until it is unpaused", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		m := builder.Machine(ns, name).WithProviderID(id).Build()
		m.Annotations = map[string]string{pausedAnnotation: ""}
		create(m)
		create(builder.Node(node).WithProviderID(id).Build())
		Consistently(getMachine(ns, name)).Should(Equal(machineState{}))
		Expect(getNode(node)(Default).Annotations).NotTo(HaveKey(annMachine))

		Eventually(func() error {
			var m testmachine.Machine
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m); err != nil {
				return err
			}
			delete(m.Annotations, pausedAnnotation)
			return k8sClient.Update(ctx, &m)
		}).Should(Succeed())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
	})

	It("keeps the conditions and status other controllers wrote", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Booting", Message: "instance booting", LastTransitionTime: metav1.Now()}
		create(builder.Machine(ns, name).WithProviderID(id).WithInternalIP(uniqueIP()).WithCondition(ready).Build())
		create(builder.Node(node).WithProviderID(id).Build())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))

		var m testmachine.Machine
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)).To(Succeed())
		Expect(m.Status.Conditions).To(ContainElement(And(
			HaveField("Type", "Ready"), HaveField("Reason", "Booting"), HaveField("Message", "instance booting"))))
		Expect(m.Status.Addresses).To(HaveLen(1))
		Expect(m.Status.NodeRef).To(Equal(&testmachine.NodeReference{Kind: "Node", Name: node, UID: getNode(node)(Default).UID}))
	})

	It("owns only the node reference and its condition, by server-side apply, when the adapter is a LinkApplier", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		create(builder.Machine(ns, name).WithProviderID(id).Build())
		create(builder.Node(node).WithProviderID(id).Build())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))

		// Another controller applies its own condition: neither write takes the other's fields.
		other := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": testmachine.GroupVersion.String(), "kind": "Machine",
			"metadata": map[string]any{"namespace": ns, "name": name},
			"status": map[string]any{"conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "NodeReady", "message": "ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
			}}},
		}}
		Expect(k8sClient.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("other-controller"))).To(Succeed())

		var m testmachine.Machine
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)).To(Succeed())
		Expect(m.Status.Conditions).To(ContainElements(HaveField("Type", nodelink.ConditionNodeLinked), HaveField("Type", "Ready")))
		Expect(m.Status.NodeRef).NotTo(BeNil())
		var owned string
		for _, f := range m.ManagedFields {
			if f.Manager == nodelink.DefaultName {
				Expect(f.Operation).To(Equal(metav1.ManagedFieldsOperationApply), "nodelink's fields are applied, not updated")
				Expect(f.Subresource).To(Equal("status"))
				owned = f.FieldsV1.GetRawString()
			}
		}
		Expect(owned).To(And(ContainSubstring(`"f:nodeRef"`), ContainSubstring(`"k:{\"type\":\"NodeLinked\"}"`), Not(ContainSubstring(`Ready`))),
			"nodelink owns status.nodeRef and its NodeLinked condition, and nothing another controller wrote")
	})
})

var _ = Describe("Keeping a linked Node's metadata in sync", func() {
	var ns, name, node string
	BeforeEach(func() {
		ns, name, node = newNamespace(), unique("m"), unique("node")
		id := "sim:///" + unique("i")
		create(builder.Machine(ns, name).WithProviderID(id).
			WithNodeLabel("node-role.kubernetes.io/worker", "").WithNodeLabel("pool", "a").
			WithNodeAnnotation("team", "x").Build())
		create(builder.Node(node).WithProviderID(id).
			WithLabel("foreign", "kept").WithAnnotation("foreign", "kept").
			WithTaint("foreign", "", corev1.TaintEffectNoSchedule).Build())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
	})

	updateMachine := func(change func(*testmachine.Machine)) {
		GinkgoHelper()
		Eventually(func() error {
			var m testmachine.Machine
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m); err != nil {
				return err
			}
			change(&m)
			return k8sClient.Update(ctx, &m)
		}).Should(Succeed())
	}

	It("sets the Machine's labels and annotations and records them as owned", func() {
		Eventually(getNode(node)).Should(And(
			HaveField("Labels", And(HaveKeyWithValue("node-role.kubernetes.io/worker", ""), HaveKeyWithValue("pool", "a"), HaveKeyWithValue("foreign", "kept"))),
			HaveField("Annotations", And(HaveKeyWithValue("team", "x"), HaveKeyWithValue("foreign", "kept"),
				HaveKeyWithValue(annOwnedLabels, "node-role.kubernetes.io/worker,pool"), HaveKeyWithValue(annOwnedAnnotate, "team")))))
	})

	It("removes a label removed from the Machine, and leaves a foreign label alone", func() {
		updateMachine(func(m *testmachine.Machine) { delete(m.Spec.Metadata.Labels, "pool") })
		Eventually(getNode(node)).Should(And(
			HaveField("Labels", Not(HaveKey("pool"))),
			HaveField("Labels", HaveKeyWithValue("foreign", "kept")),
			HaveField("Labels", HaveKey("node-role.kubernetes.io/worker")),
			HaveField("Annotations", HaveKeyWithValue(annOwnedLabels, "node-role.kubernetes.io/worker"))))
	})

	It("adds and removes a taint, and leaves a foreign taint alone", func() {
		gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
		updateMachine(func(m *testmachine.Machine) { m.Spec.Taints = append(m.Spec.Taints, gpu) })
		Eventually(getNode(node)).Should(And(
			HaveField("Spec.Taints", ContainElement(gpu)),
			HaveField("Spec.Taints", ContainElement(HaveField("Key", "foreign"))),
			HaveField("Annotations", HaveKeyWithValue(annOwnedTaints, "dedicated:NoSchedule"))))

		updateMachine(func(m *testmachine.Machine) { m.Spec.Taints = nil })
		Eventually(getNode(node)).Should(And(
			HaveField("Spec.Taints", Not(ContainElement(HaveField("Key", "dedicated")))),
			HaveField("Spec.Taints", ContainElement(HaveField("Key", "foreign"))),
			HaveField("Annotations", Not(HaveKey(annOwnedTaints)))))
	})

	It("puts back an owned label someone removed from the Node", func() {
		Eventually(func() error {
			n := getNode(node)(Default)
			delete(n.Labels, "pool")
			return k8sClient.Update(ctx, n)
		}).Should(Succeed())
		Eventually(getNode(node)).Should(HaveField("Labels", HaveKeyWithValue("pool", "a")))
	})

	It("reports a deleted Node and keeps the nodeRef", func() {
		Expect(k8sClient.Delete(ctx, getNode(node)(Default))).To(Succeed())
		Eventually(getMachine(ns, name)).Should(And(
			HaveField("NodeRef", node),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", nodelink.ReasonNodeDeleted)))
		Eventually(eventReasons(ns, name)).Should(ContainElement(nodelink.ReasonNodeDeleted))
	})

	It("releases the Node of a deleted Machine: owned metadata goes, foreign metadata and the Node stay", func() {
		Expect(k8sClient.Delete(ctx, &testmachine.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		Eventually(func(g Gomega) error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &testmachine.Machine{})
		}).Should(Satisfy(apierrors.IsNotFound))
		Eventually(getNode(node)).Should(And(
			HaveField("Labels", And(Not(HaveKey("pool")), Not(HaveKey("node-role.kubernetes.io/worker")), HaveKeyWithValue("foreign", "kept"))),
			HaveField("Annotations", And(Not(HaveKey(annMachine)), Not(HaveKey(annNamespace)), Not(HaveKey("team")),
				Not(HaveKey(annOwnedLabels)), Not(HaveKey(annOwnedAnnotate)), HaveKeyWithValue("foreign", "kept"))),
			HaveField("Spec.Taints", ContainElement(HaveField("Key", "foreign")))))
	})

	It("writes nothing when nothing changed", func() {
		Eventually(getNode(node)).Should(HaveField("Labels", HaveKey("pool")))
		var m testmachine.Machine
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)).To(Succeed())
		n := getNode(node)(Default)
		// An unrelated change to the Machine makes the linker reconcile it.
		updateMachine(func(m *testmachine.Machine) {
			m.Spec.Metadata.Labels["pool"] = "a"
			m.Labels = map[string]string{"touched": "yes"}
		})
		Consistently(func(g Gomega) string { return getNode(node)(g).ResourceVersion }).Should(Equal(n.ResourceVersion))
		Consistently(func(g Gomega) *metav1.Condition {
			var now testmachine.Machine
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &now)).To(Succeed())
			return ptr.To(now.Status.Conditions[0])
		}).Should(Equal(ptr.To(m.Status.Conditions[0])))
	})
})
