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

// Scenario 5: 60% of the Nodes go down within seconds under a health check that allows 40%
// unhealthy: an outage, not six broken machines. The check runs all the time and sees the Nodes go
// one by one; each counts against maxUnhealthy from the moment it fails (suspect, within its
// timeout), so nothing is remediated while the outage lasts; once the others recover, the one
// still broken is replaced, and nothing more.
var _ = Describe("Scenario 5: 60% of the Nodes NotReady one by one under maxUnhealthy 40%", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("mhc-storm")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("remediates nothing while over the limit (RemediationAllowed=False with both counts), then replaces only what stays broken", func() {
		ms := faults.MachineSet(s.NS, "storm", 10)
		Expect(k8s.Create(ctx, ms)).To(Succeed())
		// NotReady is judged after 90s, longer than the whole outage lasts; the Node that stays
		// broken becomes unreachable, judged after 5s.
		mhc := faults.HealthCheck(s.NS, "storm", "storm", 90, 60, "40%")
		mhc.Spec.UnhealthyConditions[1].TimeoutSeconds = 5 // Ready=Unknown
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		running := s.WaitRunning("storm", 10, 2*time.Minute)
		Eventually(func() int32 {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mhc), mhc)).To(Succeed())
			return mhc.Status.CurrentHealthy
		}).Should(Equal(int32(10)))
		s.PlaceProbes(running[:6], nil)
		allowed := func() string {
			got := &v1beta1.MachineHealthCheck{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mhc), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.RemediationAllowedCondition)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}
		healthReason := func(m *v1beta1.Machine) func() string {
			return func() string {
				got := &v1beta1.Machine{}
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
				if c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.HealthCheckSucceededCondition); c != nil {
					return c.Reason
				}
				return ""
			}
		}

		By("making 5 Nodes NotReady one after the other, the health check running")
		notReady := map[string]*string{"sim.machineapi.dev/not-ready-after": ptr.To("0s")}
		for i := range 5 {
			Annotate(&running[i], notReady)
			Eventually(func() int { return notReadyNodes(running[i : i+1]) }).Should(Equal(1), "the Node of %s goes NotReady", running[i].Name)
		}
		Eventually(allowed).Should(HavePrefix("False/TooManyUnhealthy: 5 of 10 targets failing (0 unhealthy, 5 within their timeout)"))

		By("making a sixth unreachable: unhealthy after 5s, and left alone")
		broken := &running[5]
		Annotate(broken, map[string]*string{"sim.machineapi.dev/unreachable": ptr.To("")})
		Eventually(allowed).Should(Equal("False/TooManyUnhealthy: 6 of 10 targets failing (1 unhealthy, 5 within their timeout), " +
			"more than maxUnhealthy 40% (4) allows; remediating nothing until at most 4 are"))
		Eventually(func() bool { return hasEvent(mhc.UID, "RemediationNotAllowed") }).Should(BeTrue(), "a Warning event says why")
		Eventually(healthReason(broken)).Should(Equal("RemediationNotAllowed"), "the broken Machine says why it is left alone")
		for i := range 5 {
			Expect(healthReason(&running[i])()).To(Equal("Suspect"), "Machine %s is within its timeout", running[i].Name)
		}
		Consistently(func() []string { return tracker.Remediations(s.NS) }, 10*time.Second).Should(BeEmpty(), "remediated during the outage")
		Expect(tracker.Peak(s.NS)).To(Equal(10))

		By("recovering the 5 NotReady Nodes: the one still broken is replaced, nothing else")
		for i := range 5 {
			Annotate(&running[i], map[string]*string{"sim.machineapi.dev/not-ready-after": nil})
		}
		Eventually(func() []string { return tracker.Remediations(s.NS) }).Should(ConsistOf(broken.Name))
		Eventually(allowed).Should(HavePrefix("True/WithinLimits"))
		s.WaitRunning("storm", 10, 2*time.Minute)
		Consistently(func() []string { return tracker.Remediations(s.NS) }, 5*time.Second).Should(ConsistOf(broken.Name))
		s.Expect.MaxRemediations = 1
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
