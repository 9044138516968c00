package machineset_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/test/builder"
)

// The set's part of the lineage protocol (package lineage), with the health check's part played
// by the test: mark a Machine as remediated, then delete it.
var _ = Describe("A MachineSet replacing a remediated Machine", func() {
	var (
		ns  string
		set *v1beta1.MachineSet
	)
	BeforeEach(func() {
		ns = newNamespace()
		set = builder.MachineSet(ns, "slots", 2).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		set = getSet(set)
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
	})

	// remediate marks m as the health check does (its lineage, now, the lineage finalizer) and
	// deletes it.
	remediate := func(m *v1beta1.Machine) {
		GinkgoHelper()
		_, err := lineage.Update(ctx, k8s, m, func(m *v1beta1.Machine) bool { lineage.Mark(m, time.Now()); return true })
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Delete(ctx, m)).To(Succeed())
	}
	gone := func(m *v1beta1.Machine) func() bool {
		return func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &v1beta1.Machine{}))
		}
	}
	heirsOf := func(name string) func() []string {
		return func() []string {
			var out []string
			for _, m := range machinesOf(set) {
				if m.Annotations[v1beta1.ReplacesAnnotation] == name {
					out = append(out, m.Name)
				}
			}
			return out
		}
	}
	pause := func(paused bool) {
		GinkgoHelper()
		if paused {
			patch(set, `{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":""}}}`)
		} else {
			patch(set, `{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":null}}}`)
		}
	}

	It("hands its lineage, with one remediation more, to exactly one new Machine, then lets it go", func() {
		victim := machinesOf(set)[0]
		remediate(&victim)
		Eventually(heirsOf(victim.Name)).Should(HaveLen(1))
		Eventually(gone(&victim)).Should(BeTrue(), "the lineage finalizer is removed once the heir exists")
		Consistently(heirsOf(victim.Name), "2s").Should(HaveLen(1), "one heir, never two")
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))

		heir := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: heirsOf(victim.Name)()[0]}, heir)).To(Succeed())
		Expect(lineage.Of(heir)).To(And(HaveField("ID", victim.Name), HaveField("Retries", 1), HaveField("Replaces", victim.Name)))
		Expect(heir.Finalizers).NotTo(ContainElement(v1beta1.LineageFinalizer))

		By("the heir remediated in turn: its heir counts two")
		remediate(heir)
		Eventually(heirsOf(heir.Name)).Should(HaveLen(1))
		next := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: heirsOf(heir.Name)()[0]}, next)).To(Succeed())
		Expect(lineage.Of(next)).To(And(HaveField("ID", victim.Name), HaveField("Retries", 2)))
		Eventually(liveNames(set)).Should(HaveLen(2))
	})

	It("creates no second heir when the first exists already (a set that stopped between the two writes)", func() {
		pause(true)
		machines := machinesOf(set)
		victim, other := machines[0], machines[1]
		remediate(&victim)
		// The heir the set created before it stopped, without releasing the victim.
		heir := builder.Machine(ns, "slots-heir").WithLabels(set.Spec.Template.Metadata.Labels).Build()
		heir.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet"))}
		heir.Annotations = map[string]string{v1beta1.LineageAnnotation: victim.Name, v1beta1.LineageRetriesAnnotation: "1", v1beta1.ReplacesAnnotation: victim.Name}
		Expect(k8s.Create(ctx, heir)).To(Succeed())
		Consistently(gone(&victim), "1s").Should(BeFalse(), "a paused set holds the remediated Machine")

		pause(false)
		Eventually(gone(&victim)).Should(BeTrue())
		Consistently(liveNames(set), "2s").Should(ConsistOf(other.Name, heir.Name), "no Machine is created for the victim")
		// The set recognised the heir: the victim was handed over, not released as a lineage
		// that ends (which it would be if the heir's replaces annotation were not read).
		Expect(eventReasons(set)()).NotTo(ContainElement(machineset.EventLineageEnded))
	})

	It("ends the lineage of a remediated Machine it does not replace (scaled down meanwhile)", func() {
		pause(true)
		victim := machinesOf(set)[0]
		remediate(&victim)
		patchReplicas(set, 1)
		pause(false)
		Eventually(gone(&victim)).Should(BeTrue())
		Consistently(liveNames(set), "2s").Should(HaveLen(1))
		Expect(heirsOf(victim.Name)()).To(BeEmpty())
		Eventually(eventReasons(set)).Should(ContainElement(machineset.EventLineageEnded))
	})

	It("lets the remediated Machines of a set being deleted go", func() {
		pause(true)
		victim := machinesOf(set)[0]
		remediate(&victim)
		Expect(k8s.Delete(ctx, set, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		pause(false)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(set), &v1beta1.MachineSet{}))
		}).Should(BeTrue(),
			"the set's Machines, the remediated one included, are gone")
		Expect(gone(&victim)()).To(BeTrue())
		Expect(heirsOf(victim.Name)()).To(BeEmpty())
	})
})
