package faults_test

import (
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 2: the machine manager is killed with SIGKILL (no graceful shutdown, no lease
// released, reconciles cut anywhere) while it creates, drains and deletes, and started again; and
// two managers run with leader election and the leader is killed.
var _ = Describe("Scenario 2: the machine manager killed mid-create, mid-drain and mid-delete", func() {
	var s *Scenario

	BeforeEach(func() { s = NewScenario("manager-crash") })
	AfterEach(func() { s.Verify() })

	It("mid-create: a restarted manager finishes the scale-up without a second instance for any Machine", func() {
		// Slow creates keep many Creates in flight when the kill lands.
		mgr := s.MachineManager("--sim-slow-create-rate=0.5", "--sim-slow-create-delay=2s")
		s.Start(mgr)
		md := faults.MachineDeployment(s.NS, "create", 60)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Expect(tracker.WaitFor(ctx, time.Minute, func() bool {
			return tracker.CountPhase(s.NS, v1beta1.MachinePhaseProvisioning) >= 10 && len(s.History.Seen()) >= 10
		})).To(Succeed())
		mgr.Kill()
		logf("killed mid-create: %d Provisioning, %d Running, %d instances",
			tracker.CountPhase(s.NS, v1beta1.MachinePhaseProvisioning), tracker.CountPhase(s.NS, v1beta1.MachinePhaseRunning), len(s.History.Seen()))
		time.Sleep(2 * time.Second)
		s.Start(mgr)
		s.WaitRunning("create", 60, 3*time.Minute)
		Expect(tracker.Peak(s.NS)).To(BeNumerically("<=", 60), "Machines alive at once (overshoot)")
	})

	It("mid-drain: a drain blocked by a PodDisruptionBudget survives the kill, still honours the budget, and completes once it allows", func() {
		mgr := s.MachineManager()
		s.Start(mgr)
		md := faults.MachineDeployment(s.NS, "drain", 6)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		running := s.WaitRunning("drain", 6, 2*time.Minute)
		s.PlaceProbes(running, map[string]string{"app": "web"})
		pdb := faults.Budget(s.NS, "web", 6)
		Expect(k8s.Create(ctx, pdb)).To(Succeed())
		Eventually(BudgetAllows(pdb, 0)).Should(Succeed(), "kube-controller-manager computes the budget's status")

		Scale(md, 2)
		draining := func() int {
			n := 0
			for _, r := range tracker.Machines(s.NS) {
				if r.Gone.IsZero() && r.Last.DeletionTimestamp != nil {
					if c := meta.FindStatusCondition(r.Last.Status.Conditions, v1beta1.DeletingCondition); c != nil && c.Reason == "DrainingNode" {
						n++
					}
				}
			}
			return n
		}
		Eventually(draining).Should(Equal(4), "Machines blocked draining")
		mgr.Kill()
		logf("killed mid-drain with 4 Machines blocked by the budget")
		time.Sleep(2 * time.Second)
		s.Start(mgr)

		// The budget still holds: no probe pod is evicted, no Node deleted.
		Consistently(func(g Gomega) {
			g.Expect(draining()).To(Equal(4))
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(s.NS), client.MatchingLabels{"app": "web"})).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(6))
			for _, p := range pods.Items {
				g.Expect(p.DeletionTimestamp).To(BeNil(), "pod %s evicted against its budget", p.Name)
			}
		}, 6*time.Second).Should(Succeed())

		Expect(k8s.Patch(ctx, pdb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"minAvailable":2}}`)))).To(Succeed())
		// No wait for the new status: the drains take the disruptions it allows at once.
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).Should(Equal(2))
	})

	It("mid-delete: a restarted manager finishes deleting a whole deployment, draining every Node", func() {
		mgr := s.MachineManager()
		s.Start(mgr)
		md := faults.MachineDeployment(s.NS, "delete", 30)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		running := s.WaitRunning("delete", 30, 2*time.Minute)
		s.PlaceProbes(running[:15], nil)

		Scale(md, 0)
		Expect(tracker.WaitFor(ctx, time.Minute, func() bool { live, _ := tracker.Live(s.NS); return live <= 22 })).To(Succeed())
		mgr.Kill()
		live, deleting := tracker.Live(s.NS)
		logf("killed mid-delete: %d Machines left, %d deleting, %d instances", live, deleting, len(mustInstances(s)))
		time.Sleep(2 * time.Second)
		s.Start(mgr)
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).Should(BeZero())
	})
})

// Scenario 2, leader election: two managers with --leader-elect share one simulated cloud; the
// leader is killed and the other must take over cleanly: the same Machines, no second instance
// for any of them, every drain done, the work finished.
var _ = Describe("Scenario 2: two managers with leader election, the leader killed", func() {
	var s *Scenario
	election := []string{"--leader-elect", "--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s", "--leader-election-retry-period=1s"}

	// startPair starts the leader, lets it bring pool up to n Running Machines, then starts the
	// standby, which must not lead while the leader lives.
	startPair := func(pool string, n int32) (leader, standby *faults.Component, md *v1beta1.MachineDeployment) {
		GinkgoHelper()
		leader, standby = s.MachineManager(election...), s.MachineManager(election...)
		s.Start(leader)
		Eventually(func() bool { return acquired(leader) }).WithTimeout(30 * time.Second).Should(BeTrue())
		md = faults.MachineDeployment(s.NS, pool, n)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		if n > 0 {
			s.WaitRunning(pool, int(n), 2*time.Minute)
		}
		s.Start(standby)
		// The standby runs no controllers yet; it is judged against the leader's settled baseline.
		s.baselines[standby] = s.baselines[leader]
		Consistently(func() bool { return acquired(standby) }, 3*time.Second).Should(BeFalse(), "two leaders")
		return leader, standby, md
	}

	BeforeEach(func() { s = NewScenario("leader-election") })
	AfterEach(func() { s.Verify() })

	It("hands over in the middle of a scale-down: the new leader finishes it, draining every Node", func() {
		leader, standby, md := startPair("ha", 30)
		s.PlaceProbes(s.RunningMachines("ha")[:12], nil)
		Scale(md, 10)
		Expect(tracker.WaitFor(ctx, time.Minute, func() bool { live, _ := tracker.Live(s.NS); return live <= 22 })).To(Succeed())
		leader.Kill()
		live, deleting := tracker.Live(s.NS)
		logf("leader killed: %d Machines, %d deleting", live, deleting)
		Eventually(func() bool { return acquired(standby) }).WithTimeout(30*time.Second).Should(BeTrue(), "the standby takes over")
		logf("standby is leader")
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).Should(Equal(10))
		Expect(tracker.CountPhase(s.NS, v1beta1.MachinePhaseFailed)).To(BeZero(), "Machines the new leader failed")
	})

	It("hands over in the middle of a scale-up: the new leader finishes it without losing or duplicating an instance", func() {
		leader, standby, md := startPair("ha", 0)
		Scale(md, 40)
		Expect(tracker.WaitFor(ctx, time.Minute, func() bool { return tracker.CountPhase(s.NS, v1beta1.MachinePhaseRunning) >= 15 })).To(Succeed())
		leader.Kill()
		logf("leader killed: %d Running, %d instances", tracker.CountPhase(s.NS, v1beta1.MachinePhaseRunning), len(s.History.Seen()))
		Eventually(func() bool { return acquired(standby) }).WithTimeout(30*time.Second).Should(BeTrue(), "the standby takes over")
		s.WaitRunning("ha", 40, 3*time.Minute)
		Expect(tracker.CountPhase(s.NS, v1beta1.MachinePhaseFailed)).To(BeZero(), "Machines the new leader failed")
	})
})

// acquired reports whether a manager's log says it became the leader.
func acquired(c *faults.Component) bool {
	data, err := os.ReadFile(c.CurrentLog())
	return err == nil && strings.Contains(strings.ToLower(string(data)), "successfully acquired lease")
}

func mustInstances(s *Scenario) map[string]bool {
	insts, err := faults.ReadInstances(s.SimDir)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]bool{}
	for id := range insts {
		out[string(id)] = true
	}
	return out
}
