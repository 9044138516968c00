package machineset_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// The set's part of remediation by the owner (package lineage), with the health check's part
// played by the test: its verdict, OwnerRemediated=False, applied on the Machine's status as the
// health check applies it.
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

	// remediate writes the health check's verdict on m, asked at the given time.
	remediate := func(m *v1beta1.Machine, reason string, at time.Time) {
		GinkgoHelper()
		c := metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: reason,
			Message: "the test asks the set to replace it", LastTransitionTime: metav1.NewTime(at)}
		ac := acv1beta1.Machine(m.Name, m.Namespace).WithStatus(acv1beta1.MachineStatus().WithConditions(conditions.ApplyConfiguration(c)))
		Expect(k8s.Status().Apply(ctx, ac, client.FieldOwner("test-health-check"))).To(Succeed())
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
	heir := func(of string) *v1beta1.Machine {
		GinkgoHelper()
		Eventually(heirsOf(of)).Should(HaveLen(1))
		m := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: heirsOf(of)()[0]}, m)).To(Succeed())
		return m
	}
	pause := func(paused bool) {
		GinkgoHelper()
		if paused {
			patch(set, `{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":""}}}`)
		} else {
			patch(set, `{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":null}}}`)
		}
	}
	asked := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)

	It("creates its replacement carrying the lineage with one remediation more, deletes it, and counts on from there", func() {
		victim := machinesOf(set)[0]
		remediate(&victim, v1beta1.RemediationRequestedReason, asked)
		first := heir(victim.Name)
		Eventually(gone(&victim)).Should(BeTrue(), "the remediated Machine is deleted once its replacement exists")
		Consistently(heirsOf(victim.Name), "2s").Should(HaveLen(1), "one replacement, never two")
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		Expect(lineage.Of(first)).To(Equal(lineage.Lineage{ID: victim.Name, Retries: 1, LastRemediated: asked, Replaces: victim.Name}))
		Expect(eventReasons(set)()).To(ContainElement(machineset.EventRemediated))

		By("the replacement remediated in turn: its replacement counts two")
		remediate(first, v1beta1.RemediationRequestedReason, asked.Add(time.Second))
		Expect(lineage.Of(heir(first.Name))).To(And(HaveField("ID", victim.Name), HaveField("Retries", 2)))
		Eventually(liveNames(set)).Should(HaveLen(2))
	})

	It("counts one remediation again when the health check says the lineage starts over", func() {
		victim := machinesOf(set)[0]
		patch(&victim, `{"metadata":{"annotations":{"`+v1beta1.LineageAnnotation+`":"old","`+v1beta1.LineageRetriesAnnotation+`":"3"}}}`)
		remediate(&victim, v1beta1.RemediationRequestedLineageResetReason, asked)
		Expect(lineage.Of(heir(victim.Name))).To(And(HaveField("ID", "old"), HaveField("Retries", 1)))
	})

	It("creates no second replacement when the first exists already (a set that stopped between the create and the delete)", func() {
		pause(true)
		machines := machinesOf(set)
		victim, other := machines[0], machines[1]
		remediate(&victim, v1beta1.RemediationRequestedReason, asked)
		// The replacement the set created before it stopped, without deleting the victim.
		made := builder.Machine(ns, "slots-heir").WithLabels(set.Spec.Template.Metadata.Labels).Build()
		made.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet"))}
		made.Annotations = map[string]string{v1beta1.LineageAnnotation: victim.Name, v1beta1.LineageRetriesAnnotation: "1", v1beta1.ReplacesAnnotation: victim.Name}
		Expect(k8s.Create(ctx, made)).To(Succeed())
		Consistently(gone(&victim), "1s").Should(BeFalse(), "a paused set keeps the remediated Machine")

		pause(false)
		Eventually(gone(&victim)).Should(BeTrue())
		Consistently(liveNames(set), "2s").Should(ConsistOf(other.Name, made.Name), "no Machine is created for the victim")
		// The set recognised the replacement: the victim was replaced, not deleted as a lineage
		// that ends (which it would be if the replacement's replaces annotation were not read).
		Expect(eventReasons(set)()).NotTo(ContainElement(machineset.EventLineageEnded))
	})

	It("deletes a remediated Machine it does not replace (scaled down meanwhile), and its lineage ends", func() {
		pause(true)
		victim := machinesOf(set)[0]
		remediate(&victim, v1beta1.RemediationRequestedReason, asked)
		patchReplicas(set, 1)
		pause(false)
		Eventually(gone(&victim)).Should(BeTrue())
		Consistently(liveNames(set), "2s").Should(HaveLen(1))
		Expect(heirsOf(victim.Name)()).To(BeEmpty())
		Eventually(eventReasons(set)).Should(ContainElement(machineset.EventLineageEnded))
	})

	It("deletes the remediated Machines of a set being deleted with the rest", func() {
		pause(true)
		victim := machinesOf(set)[0]
		remediate(&victim, v1beta1.RemediationRequestedReason, asked)
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
