package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 5: 60% of the Nodes go NotReady at once under a health check that allows 40%
// unhealthy: an outage, not ten broken machines. Nothing may be remediated while it lasts; once
// most Nodes recover, the few still broken are replaced, and nothing more.
var _ = Describe("Scenario 5: 60% of the Nodes NotReady at once under maxUnhealthy 40%", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("mhc-storm")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("remediates nothing while over the limit (RemediationAllowed=False), then replaces only what stays broken", func() {
		ms := faults.MachineSet(s.NS, "storm", 10)
		Expect(k8s.Create(ctx, ms)).To(Succeed())
		mhc := faults.HealthCheck(s.NS, "storm", "storm", 3, 60, "40%")
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		running := s.WaitRunning("storm", 10, 2*time.Minute)
		Eventually(func() int32 {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mhc), mhc)).To(Succeed())
			return mhc.Status.CurrentHealthy
		}).Should(Equal(int32(10)))
		s.PlaceProbes(running[:6], nil)

		By("making 6 of 10 Nodes NotReady at once")
		// The Nodes go NotReady one by one; the check is paused meanwhile, and until each has been
		// NotReady for longer than the timeout, so that it sees 6 unhealthy at once (an outage),
		// not first 1, 2, 3, 4 (within the limit, and rightly remediated).
		paused := map[string]*string{v1beta1.PausedAnnotation: ptr.To("")}
		Annotate(mhc, paused)
		notReady := map[string]*string{"sim.machineapi.dev/not-ready-after": ptr.To("0s")}
		for i := range 6 {
			Annotate(&running[i], notReady)
		}
		Eventually(func() int { return notReadyNodes(running) }).Should(Equal(6))
		time.Sleep(4 * time.Second)
		Annotate(mhc, map[string]*string{v1beta1.PausedAnnotation: nil})
		allowed := func() string {
			got := &v1beta1.MachineHealthCheck{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mhc), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.RemediationAllowedCondition)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}
		Eventually(allowed).Should(Equal("False/TooManyUnhealthy"))
		Eventually(func() bool { return hasEvent(mhc.UID, "RemediationNotAllowed") }).Should(BeTrue(), "a Warning event says why")
		Eventually(func(g Gomega) {
			for i := range 6 {
				m := &v1beta1.Machine{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&running[i]), m)).To(Succeed())
				c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal("RemediationNotAllowed"), "Machine %s says why it is left alone", m.Name)
			}
		}).Should(Succeed())
		Consistently(func() []string { return tracker.Remediations(s.NS) }, 10*time.Second).Should(BeEmpty(), "remediated during the outage")
		Expect(tracker.Peak(s.NS)).To(Equal(10))

		By("recovering 4 of them: 2 unhealthy is within the limit")
		// Paused again while they recover one by one, for the same reason: 4 still down is
		// within the limit.
		Annotate(mhc, paused)
		for i := range 4 {
			Annotate(&running[i], map[string]*string{"sim.machineapi.dev/not-ready-after": nil})
		}
		Eventually(func() int { return notReadyNodes(running) }).Should(Equal(2))
		Annotate(mhc, map[string]*string{v1beta1.PausedAnnotation: nil})
		Eventually(allowed).Should(Equal("True/WithinLimits"))
		Eventually(func() []string { return tracker.Remediations(s.NS) }).Should(ConsistOf(running[4].Name, running[5].Name))
		s.WaitRunning("storm", 10, 2*time.Minute)
		s.Expect.MaxRemediations = 2
	})
})

// notReadyNodes counts the Machines whose Node is not Ready.
func notReadyNodes(machines []v1beta1.Machine) int {
	GinkgoHelper()
	n := 0
	for _, m := range machines {
		node := &corev1.Node{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// hasEvent reports whether an event with reason was recorded about the object with uid.
func hasEvent(uid types.UID, reason string) bool {
	for _, e := range tracker.EventsFor(uid) {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
