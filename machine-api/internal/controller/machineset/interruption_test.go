package machineset_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/provider/sim"
)

// Interruption notices, end to end on the running manager with the simulated provider: the
// machine controller records the notice (from the annotation, or from the provider), the set
// replaces the Machine first and deletes it once the replacement is Running.
var _ = Describe("A MachineSet whose Machine's instance is to be interrupted", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// slowBoot makes the set's next Machines take 3s to boot, so that a replacement deleted
	// before it is Running shows in the timestamps (whole seconds).
	slowBoot := func(set *v1beta1.MachineSet) {
		GinkgoHelper()
		patch(set, `{"spec":{"template":{"metadata":{"annotations":{"`+sim.BootDelayAnnotation+`":"3s"}}}}}`)
	}

	// held holds the Machine's deletion with a preDrain hook, so the spec sees it deleting.
	held := func(m *v1beta1.Machine) {
		GinkgoHelper()
		patch(m, `{"spec":{"lifecycleHooks":{"preDrain":[{"name":"hold","owner":"test"}]}}}`)
	}

	// replacedFirst waits until the Machine named victim (held in deletion) is deleted and checks,
	// at the first look after its deletion started, that its replacement was already Running.
	replacedFirst := func(set *v1beta1.MachineSet, victim v1beta1.Machine) *v1beta1.Machine {
		GinkgoHelper()
		var deleting, heir *v1beta1.Machine
		Eventually(func() bool {
			m := &v1beta1.Machine{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(&victim), m); err != nil || m.DeletionTimestamp.IsZero() {
				return false
			}
			deleting = m
			for _, h := range machinesOf(set) {
				if h.Annotations[v1beta1.ReplacesAnnotation] == victim.Name {
					heir = &h
				}
			}
			return true
		}).WithPolling(50*time.Millisecond).Should(BeTrue(), "the interrupted Machine is deleted")
		Expect(heir).NotTo(BeNil(), "a replacement names the interrupted Machine")
		Expect(heir.Status.Phase).To(Equal(v1beta1.MachinePhaseRunning), "the replacement was Running when the interrupted Machine's deletion started")
		Expect(lineage.Of(heir).Retries).To(Equal(lineage.Of(deleting).Retries), "an interruption is no failure: the lineage count stays")
		Eventually(readyReplicas(set)).Should(Equal(*set.Spec.Replicas))
		patch(deleting, `{"spec":{"lifecycleHooks":{"preDrain":null}}}`)
		return deleting
	}

	It("announced by a person with the interruption-deadline annotation: the replacement runs before the Machine is deleted", func() {
		set := builder.MachineSet(ns, "pool", 2).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		victim := machinesOf(set)[0]
		slowBoot(set)
		held(&victim)

		deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		patch(&victim, `{"metadata":{"annotations":{"`+v1beta1.InterruptionDeadlineAnnotation+`":"`+deadline.Format(time.RFC3339)+`"}}}`)
		deleting := replacedFirst(set, victim)
		Expect(deleting.Status.Interruption).NotTo(BeNil())
		Expect(deleting.Status.Interruption.Deadline.Time).To(BeTemporally("==", deadline))
		Expect(deleting.Status.Interruption.Reason).To(Equal("Manual"))
		c := meta.FindStatusCondition(deleting.Status.Conditions, v1beta1.InstanceInterruptionCondition)
		Expect(c).To(HaveField("Reason", "Manual"))
		Eventually(eventReasons(set)).Should(ContainElement(machineset.EventInterrupted), "events are written asynchronously")
	})

	It("announced by the provider (a spot reclaim): the replacement runs before the Machine is deleted", func() {
		set := builder.MachineSet(ns, "spot", 1).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(1)))
		victim := machinesOf(set)[0]
		slowBoot(set)
		held(&victim)

		at := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
		patch(&victim, `{"metadata":{"annotations":{"`+sim.ReclaimAtAnnotation+`":"`+at.Format(time.RFC3339)+`","`+sim.ReclaimNoticeAnnotation+`":"15m"}}}`)
		deleting := replacedFirst(set, victim)
		Expect(deleting.Status.Interruption).To(HaveField("Reason", "SpotReclaim"))
		Expect(deleting.Status.Interruption.Deadline.Time).To(BeTemporally("==", at))
	})

	It("on short notice deletes (drains) the Machine at once, before its replacement runs, and well before the deadline", func() {
		set := builder.MachineSet(ns, "short", 1).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(1)))
		victim := machinesOf(set)[0]

		// 90s left, less than the 2m the set leaves for the drain: announced at once (the
		// default notice is 2m) and acted on at once.
		at := time.Now().Add(90 * time.Second).UTC().Truncate(time.Second)
		patch(&victim, `{"metadata":{"annotations":{"`+sim.ReclaimAtAnnotation+`":"`+at.Format(time.RFC3339)+`"}}}`)
		Eventually(func() bool {
			m := &v1beta1.Machine{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(&victim), m)
			return apierrors.IsNotFound(err) || (err == nil && !m.DeletionTimestamp.IsZero())
		}).Should(BeTrue())
		Expect(time.Now()).To(BeTemporally("<", at.Add(-time.Minute)))
		Eventually(readyReplicas(set)).Should(Equal(int32(1)), "replaced")
		Eventually(eventNotes(set)).Should(ContainElement(ContainSubstring("the deadline is near")))
	})

	It("says what is wrong with an annotation that is no time, and replaces nothing", func() {
		set := builder.MachineSet(ns, "typo", 1).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(1)))
		victim := machinesOf(set)[0]
		patch(&victim, `{"metadata":{"annotations":{"`+v1beta1.InterruptionDeadlineAnnotation+`":"tomorrow"}}}`)
		Eventually(func() string {
			m := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&victim), m)).To(Succeed())
			c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.InstanceInterruptionCondition)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}).Should(And(HavePrefix("False/InvalidInterruptionDeadline"), ContainSubstring("RFC 3339")))
		Consistently(liveNames(set), "2s").Should(Equal([]string{victim.Name}))
	})
})
