package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/nodelink"
)

// Scenario 4: Nodes misbehave. A Node is deleted under a Running Machine; a Node never registers;
// two instances (and a Node nobody owns) report the same InternalIP.
var _ = Describe("Scenario 4: Node faults", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("node-faults")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("replaces a Machine whose Node was deleted under it, and one whose Node never registers", func() {
		ms := faults.MachineSet(s.NS, "nodes", 5)
		Expect(k8s.Create(ctx, ms)).To(Succeed())
		Expect(k8s.Create(ctx, faults.HealthCheck(s.NS, "nodes", "nodes", 5, 15, "40%"))).To(Succeed())
		running := s.WaitRunning("nodes", 5, 2*time.Minute)

		By("deleting the Node of a Running Machine")
		victim := running[0]
		node := victim.Status.NodeRef.Name
		s.PlaceProbes(running[1:3], nil)
		s.Expect.ExemptNodes[node] = "deleted by the scenario"
		Expect(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
		Eventually(func() string {
			m := &v1beta1.Machine{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&victim), m); err != nil {
				return "gone"
			}
			c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.NodeLinkedCondition)
			if c == nil {
				return ""
			}
			return c.Reason
		}).Should(Or(Equal(nodelink.ReasonNodeDeleted), Equal("gone")), "the link reports the deleted Node")
		Eventually(func() []string { return tracker.Remediations(s.NS) }).Should(ContainElement(victim.Name), "remediated")
		s.WaitRunning("nodes", 5, 2*time.Minute)

		By("adding a Machine whose Node never registers")
		never := map[string]*string{"sim.machineapi.dev/never-boot": ptr.To("")}
		patchTemplateAnnotations(ms, never)
		Scale(ms, 6)
		var stuck types.UID
		Eventually(func() bool {
			for _, r := range tracker.Machines(s.NS) {
				if r.Gone.IsZero() && r.Last.Spec.ProviderID != "" && r.Last.Status.NodeRef == nil && r.Annotations["sim.machineapi.dev/never-boot"] {
					stuck = r.UID
					return true
				}
			}
			return false
		}).Should(BeTrue(), "a provisioned Machine without a Node")
		// Only that Machine's instance was created with the knob: the replacement boots.
		patchTemplateAnnotations(ms, map[string]*string{"sim.machineapi.dev/never-boot": nil})
		Eventually(func() bool {
			for _, r := range tracker.Machines(s.NS) {
				if r.UID == stuck {
					return r.Remediated
				}
			}
			return false
		}).Should(BeTrue(), "remediated after nodeStartupTimeoutSeconds")
		s.WaitRunning("nodes", 6, 2*time.Minute)
		s.Expect.MaxRemediations = 2
	})

	It("links two Machines reporting the same InternalIP each to its own Node, never to a stranger with that IP", func() {
		const ip = "10.250.0.7"
		stranger := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "stranger-" + s.NS, Labels: map[string]string{scenarioNodeLabel: s.NS}},
		}
		Expect(k8s.Create(ctx, stranger)).To(Succeed())
		// kube-controller-manager writes new Nodes too (node lifecycle, taints): a merge patch
		// without an optimistic lock sets the address whatever it wrote meanwhile.
		before := stranger.DeepCopy()
		stranger.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		stranger.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Patch(ctx, stranger, client.MergeFrom(before))).To(Succeed())

		var machines []*v1beta1.Machine
		for _, name := range []string{"dup-a", "dup-b"} {
			m := faults.Machine(s.NS, name)
			m.Annotations = map[string]string{"sim.machineapi.dev/internal-ip": ip}
			Expect(k8s.Create(ctx, m)).To(Succeed())
			machines = append(machines, m)
		}
		linkedToOwnNode := func(g Gomega) {
			for _, m := range machines {
				got := &v1beta1.Machine{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
				g.Expect(got.Status.NodeRef).NotTo(BeNil(), "%s linked", m.Name)
				g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, v1beta1.NodeLinkedCondition)).To(BeTrue())
				node := &corev1.Node{}
				g.Expect(k8s.Get(ctx, types.NamespacedName{Name: got.Status.NodeRef.Name}, node)).To(Succeed())
				g.Expect(node.Spec.ProviderID).To(Equal(got.Spec.ProviderID), "%s is linked to another Machine's Node", m.Name)
				g.Expect(node.Annotations).To(HaveKeyWithValue(v1beta1.MachineAnnotation, m.Name))
			}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stranger), stranger)).To(Succeed())
			g.Expect(stranger.Annotations).NotTo(HaveKey(v1beta1.MachineAnnotation), "the stranger Node was adopted by IP")
		}
		Eventually(linkedToOwnNode).Should(Succeed())
		Consistently(linkedToOwnNode, 5*time.Second).Should(Succeed())
		Expect(faults.CheckLinks(s.Subject(), true)).To(BeEmpty(), "no link dropped or moved")
		Expect(k8s.Delete(ctx, stranger)).To(Succeed())
	})
})

// patchTemplateAnnotations merges annotations into a MachineSet's template (a nil value removes
// the key); metadata changes propagate to its Machines in place.
func patchTemplateAnnotations(ms *v1beta1.MachineSet, kv map[string]*string) {
	GinkgoHelper()
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ms), ms)).To(Succeed())
	before := ms.DeepCopy()
	if ms.Spec.Template.Metadata.Annotations == nil {
		ms.Spec.Template.Metadata.Annotations = map[string]string{}
	}
	for k, v := range kv {
		if v == nil {
			delete(ms.Spec.Template.Metadata.Annotations, k)
		} else {
			ms.Spec.Template.Metadata.Annotations[k] = *v
		}
	}
	Expect(k8s.Patch(ctx, ms, client.MergeFrom(before))).To(Succeed())
}
