package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 1: the API server dies (SIGKILL) in the middle of a 200-machine scale-up and comes
// back 10 seconds later on the same etcd. Writes in flight are lost or half-answered, every watch
// breaks, every cache relists. The deployment must end with exactly 200 Machines, each with
// one instance, and never more than 200 at once.
var _ = Describe("Scenario 1: kube-apiserver stopped and restarted in the middle of a 200-machine scale-up", func() {
	const replicas = 200
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("apiserver-restart")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("ends with exactly 200 Machines and 200 instances, never more, then drains what it scales down", func() {
		md := faults.MachineDeployment(s.NS, "big", 0)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Scale(md, replicas)

		Expect(tracker.WaitFor(ctx, time.Minute, func() bool { live, _ := tracker.Live(s.NS); return live >= 50 })).To(Succeed())
		plane.KillAPIServer()
		live, _ := tracker.Live(s.NS)
		logf("kube-apiserver killed with %d Machines seen, %d instances", live, len(s.History.Seen()))
		time.Sleep(10 * time.Second)
		startAPIServerAgain()

		running := s.WaitRunning("big", replicas, 4*time.Minute)
		logf("%d Machines Running", len(running))
		Expect(tracker.Peak(s.NS)).To(BeNumerically("<=", replicas), "Machines alive at once (overshoot)")

		// Scale down with pods on the Nodes that go: each must be drained.
		s.PlaceProbes(running[:40], nil)
		Scale(md, 150)
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).WithTimeout(3*time.Minute).Should(Equal(150), "live Machines")
		Expect(tracker.CountPhase(s.NS, v1beta1.MachinePhaseFailed)).To(BeZero())
	})
})
