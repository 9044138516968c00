package faults_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 3: the provider fails a fraction of its calls. Creates fail transiently or answer
// slowly, Exists, Update and Delete fail transiently, for a whole scale-up, scale-down and final
// deletion. Everything must converge by retrying, with no instance created twice and none lost.
var _ = Describe("Scenario 3: a provider that fails, times out and is slow for a fraction of calls", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("provider-faults")
		s.Start(s.MachineManager(
			"--sim-create-failure-rate=0.3",
			"--sim-call-failure-rate=0.2",
			"--sim-slow-create-rate=0.2",
			"--sim-slow-create-delay=3s",
		))
	})
	AfterEach(func() { s.Verify() })

	It("scales a deployment up to 40 and down to 15 through the errors, draining what it deletes", func() {
		md := faults.MachineDeployment(s.NS, "flaky", 40)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		running := s.WaitRunning("flaky", 40, 3*time.Minute)

		s.PlaceProbes(running[:12], nil)
		Scale(md, 15)
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).WithTimeout(3*time.Minute).Should(Equal(15), "live Machines")
		Expect(tracker.CountPhase(s.NS, v1beta1.MachinePhaseFailed)).To(BeZero(), "a transient error never fails a Machine")
	})
})
