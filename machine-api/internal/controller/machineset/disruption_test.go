package machineset_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// A set's deletions on purpose wait for its disruption budget, on the whole manager (the machine
// controller drains and deletes what the set deletes; the simulated kubelet gives every Machine a
// Node). A pre-drain hook on every Machine keeps a deleted Machine deleting until the test lets
// it go, so "being disrupted" lasts as long as the test wants.
var _ = Describe("A MachineSet with a disruption budget", func() {
	const hook = "test-hold"
	var ns string

	// newSet creates a set of n Machines with budgets and the pre-drain hook, and waits for them
	// to be Running with their Nodes.
	newSet := func(n int32, budgets ...v1beta1.DisruptionBudget) *v1beta1.MachineSet {
		GinkgoHelper()
		set := builder.MachineSet(ns, "pool", n).Build()
		set.Spec.Template.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: hook, Owner: "disruption-test"}}
		set.Spec.Disruption = &v1beta1.Disruption{Budgets: budgets}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		set = getSet(set)
		Eventually(readyReplicas(set)).Should(Equal(n))
		return set
	}
	// deleting lists the set's Machines being deleted.
	deleting := func(set *v1beta1.MachineSet) func() []v1beta1.Machine {
		return func() []v1beta1.Machine {
			var out []v1beta1.Machine
			for _, m := range machinesOf(set) {
				if !m.DeletionTimestamp.IsZero() {
					out = append(out, m)
				}
			}
			return out
		}
	}
	// held lists "name: message" of the set's Machines that say a budget holds them.
	held := func(set *v1beta1.MachineSet) func() map[string]string {
		return func() map[string]string {
			out := map[string]string{}
			for _, m := range machinesOf(set) {
				c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition)
				if c != nil && c.Status == metav1.ConditionFalse && c.Reason == machineset.ReasonWaitingForDisruptionBudget {
					out[m.Name] = c.Message
				}
			}
			return out
		}
	}
	release := func(m v1beta1.Machine) {
		GinkgoHelper()
		patch(&m, `{"spec":{"lifecycleHooks":{"preDrain":null}}}`)
	}
	// sample records, until stop is called, the most Machines of set seen deleting at once.
	sample := func(set *v1beta1.MachineSet) (most func() int, stop func()) {
		var mu sync.Mutex
		peak := 0
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				n := len(deleting(set)())
				mu.Lock()
				peak = max(peak, n)
				mu.Unlock()
			}
		}()
		return func() int { mu.Lock(); defer mu.Unlock(); return peak }, func() { close(done); wg.Wait() }
	}

	BeforeEach(func() { ns = newNamespace() })

	It("scales down one Machine at a time under a budget of 1, and says which Machines it holds", func() {
		set := newSet(4, v1beta1.DisruptionBudget{Name: "one-at-a-time", Nodes: intstr.FromInt32(1)})
		most, stop := sample(set)
		defer stop()

		patchReplicas(set, 1)
		for round := range 3 {
			Eventually(deleting(set)).Should(HaveLen(1), "round %d: one Machine is being deleted", round)
			Consistently(deleting(set), "2s").Should(HaveLen(1), "round %d: and no second one while it is", round)
			if waiting := 2 - round; waiting > 0 {
				Eventually(held(set)).Should(HaveLen(waiting))
				for _, msg := range held(set)() {
					Expect(msg).To(And(ContainSubstring("ScaleDown"), ContainSubstring("one-at-a-time")))
				}
				Expect(condition(set, v1beta1.ScalingDownCondition)()).To(Equal("True/" + machineset.ReasonWaitingForDisruptionBudget))
			}
			gone := deleting(set)()[0]
			release(gone)
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&gone), &v1beta1.Machine{}))
			}).Should(BeTrue(), "round %d: the released Machine goes", round)
		}
		Eventually(liveNames(set)).Should(HaveLen(1))
		Eventually(deleting(set)).Should(BeEmpty())
		Expect(most()).To(Equal(1), "never more than the budget's one Machine deleted at once")
		Eventually(held(set)).Should(BeEmpty(), "the Machine kept no longer says it is held")
	})

	It("lets nothing go in a frozen window, and deletes once the budget is lifted", func() {
		set := newSet(3, v1beta1.DisruptionBudget{
			Name: "freeze", Nodes: intstr.FromInt32(0), Reasons: []v1beta1.DisruptionReason{v1beta1.DisruptionScaleDown},
			Schedule: "* * * * *", DurationSeconds: ptr.To[int32](3600), TimeZone: "Europe/Berlin",
		})
		patchReplicas(set, 1)
		Eventually(held(set)).Should(HaveLen(2))
		Consistently(deleting(set), "3s").Should(BeEmpty(), "a window of nodes 0 holds every scale-down")
		for _, msg := range held(set)() {
			Expect(msg).To(And(ContainSubstring("freeze"), ContainSubstring("Europe/Berlin"), ContainSubstring("closes at")))
		}

		By("the budget lifted: both go, and nothing says held any more")
		patch(set, `{"spec":{"disruption":null}}`)
		Eventually(deleting(set)).Should(HaveLen(2))
		for _, m := range deleting(set)() {
			release(m)
		}
		Eventually(liveNames(set)).Should(HaveLen(1))
		Eventually(held(set)).Should(BeEmpty())
	})

	It("holds a Machine marked do-not-disrupt for its grace period, without any budget, then deletes it", func() {
		set := newSet(2)
		protected := machinesOf(set)[0]
		patch(&protected, `{"metadata":{"annotations":{"`+v1beta1.DeleteMachineAnnotation+`":"yes","`+v1beta1.DoNotDisruptAnnotation+`":"6s"}}}`)
		patchReplicas(set, 1)
		Eventually(func() string {
			m := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&protected), m)).To(Succeed())
			if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition); c != nil {
				return string(c.Status) + "/" + c.Reason
			}
			return ""
		}).Should(Equal("False/" + machineset.ReasonDoNotDisrupt))
		Consistently(deleting(set), "2s").Should(BeEmpty(), "held for its grace period, and no other Machine taken instead of the one marked")
		Eventually(deleting(set), "20s").Should(ConsistOf(HaveField("Name", protected.Name)), "deleted once the grace period ended")
		Expect(eventReasons(&protected)()).To(ContainElement(machineset.ReasonDoNotDisrupt))
	})

	It("holds a Machine whose Node runs a pod marked do-not-disrupt until the pod goes", func() {
		set := newSet(2)
		protected := machinesOf(set)[0]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch-job", Annotations: map[string]string{v1beta1.DoNotDisruptAnnotation: "true"}},
			Spec:       corev1.PodSpec{NodeName: protected.Status.NodeRef.Name, Containers: []corev1.Container{{Name: "c", Image: "example.com/job"}}},
		}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		patch(&protected, `{"metadata":{"annotations":{"`+v1beta1.DeleteMachineAnnotation+`":"yes"}}}`)
		patchReplicas(set, 1)
		Eventually(func() string {
			m := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&protected), m)).To(Succeed())
			if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition); c != nil {
				return string(c.Status) + "/" + c.Reason + ": " + c.Message
			}
			return ""
		}).Should(And(HavePrefix("False/"+machineset.ReasonDoNotDisrupt), ContainSubstring("pod "+ns+"/batch-job")))
		Consistently(deleting(set), "2s").Should(BeEmpty(), "held while the pod runs")

		By("the pod finished and deleted: the Machine goes")
		Expect(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(deleting(set), "30s").Should(ConsistOf(HaveField("Name", protected.Name)))
	})

	It("holds a remediation in a frozen window while a Machine whose instance vanished is deleted at once", func() {
		set := newSet(2, v1beta1.DisruptionBudget{Name: "no-remediation", Nodes: intstr.FromString("0%"),
			Reasons: []v1beta1.DisruptionReason{v1beta1.DisruptionRemediation}})
		machines := machinesOf(set)
		sick, lost := machines[0], machines[1]
		remediate := func(m v1beta1.Machine) {
			GinkgoHelper()
			c := metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse, Reason: v1beta1.RemediationRequestedReason,
				Message: "the test asks the set to replace it", LastTransitionTime: metav1.Now()}
			ac := acv1beta1.Machine(m.Name, m.Namespace).WithStatus(acv1beta1.MachineStatus().WithConditions(conditions.ApplyConfiguration(c)))
			Expect(k8s.Status().Apply(ctx, ac, client.FieldOwner("test-health-check"))).To(Succeed())
		}

		By("a remediation: the replacement is created, the sick Machine is held")
		remediate(sick)
		Eventually(held(set)).Should(HaveKeyWithValue(sick.Name, And(ContainSubstring("Remediation"), ContainSubstring("no-remediation"))))
		Eventually(liveNames(set)).Should(HaveLen(3), "the replacement exists beside the held Machine")

		By("an instance that vanished: its Machine goes at once, through the same freeze")
		Expect(st.Sim.DeleteInstance(ctx, provider.Instance{MachineUID: lost.UID})).To(Succeed())
		Eventually(func() *v1beta1.MachineFailureReason {
			m := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&lost), m)).To(Succeed())
			return m.Status.FailureReason
		}).Should(HaveValue(Equal(v1beta1.InstanceMissingFailure)))
		remediate(lost)
		Eventually(func() bool {
			m := &v1beta1.Machine{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(&lost), m)
			return apierrors.IsNotFound(err) || !m.DeletionTimestamp.IsZero()
		}).Should(BeTrue(), "an involuntary loss is never held")
		Consistently(held(set), "2s").Should(HaveKey(sick.Name), "while the remediation still waits")
		Expect(deleting(set)()).NotTo(ContainElement(HaveField("Name", sick.Name)))
	})
})
