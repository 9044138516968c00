package machinehealthcheck_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider/sim"
)

// The behaviours of issue 18, with the whole manager running in the spec's namespace: a health
// check that holds during a correlated outage, and remediation that cannot churn forever.
var _ = Describe("A MachineHealthCheck running all the time", func() {
	var ns string
	BeforeEach(func() { ns = managedNamespace() })

	It("remediates nothing while Nodes go down one by one in an outage, then only the one still broken", func() {
		lbls := map[string]string{"pool": "zone"}
		set := pausedSet(ns, "zone", 10, lbls)
		ms := machines(ns, "zone", 10, set, lbls, nil)
		allRunning(ms)
		uids := map[types.NamespacedName]types.UID{}
		for _, m := range ms {
			uids[m] = getMachine(m).UID
		}
		// NotReady is suspect for a minute, long enough for the whole outage; the one Node that
		// becomes unreachable (the one that stays broken) is unhealthy after 3s.
		c := builder.MachineHealthCheck(ns, "zone", lbls).
			WithUnhealthyCondition("Ready", "False", 60).WithUnhealthyCondition("Ready", "Unknown", 3).WithMaxUnhealthy("40%").Build()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		check := client.ObjectKeyFromObject(c)
		Eventually(func() int32 { return getCheck(check)().Status.CurrentHealthy }).Should(BeEquivalentTo(10))
		unpause(set)

		By("5 Nodes going NotReady one after the other, each seen by the check as suspect before the next")
		for i, m := range ms[:5] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, notReady)
			Eventually(healthCheck(m)).Should(MatchRegexp(`^Unknown/Suspect: Node \S+ has had Ready=False since \S+; unhealthy at \S+ unless it recovers \(timeoutSeconds 60\)`),
				"Machine %d is suspect", i)
		}
		Eventually(remediationAllowed(check)).Should(Equal("False/TooManyUnhealthy: 5 of 10 targets failing (0 unhealthy, 5 within their timeout), " +
			"more than maxUnhealthy 40% (4) allows; remediating nothing until at most 4 are"))

		By("a sixth becoming unreachable, unhealthy once its 3s have passed: still nothing is remediated")
		broken := ms[5]
		setAnnotation(broken, sim.UnreachableAnnotation, ptr.To(""))
		Eventually(remediationAllowed(check)).Should(Equal("False/TooManyUnhealthy: 6 of 10 targets failing (1 unhealthy, 5 within their timeout), " +
			"more than maxUnhealthy 40% (4) allows; remediating nothing until at most 4 are"))
		Eventually(healthCheck(broken)).Should(MatchRegexp(`^False/RemediationNotAllowed: Node \S+ has had Ready=Unknown since .*; not remediated: ` +
			`more targets are failing than maxUnhealthy 40% \(4\) allows`))
		for _, m := range ms[:5] {
			Expect(healthCheck(m)()).To(ContainSubstring("; meanwhile remediation is stopped: more targets are failing than maxUnhealthy 40% (4) allows"))
		}
		Eventually(events(ns, "zone")).Should(ContainElement(HavePrefix("Warning RemediationNotAllowed: 6 of 10 targets failing")))
		Expect(getCheck(check)().Status.RemediationsAllowed).To(BeZero())
		Consistently(removedEach(ms)).Should(HaveEach(false), "no Machine is remediated during the outage")

		By("the 5 NotReady Nodes recovering: the one still broken is remediated and replaced, no other Machine is touched")
		for _, m := range ms[:5] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, nil)
		}
		Eventually(removed(broken)).Should(BeTrue())
		Eventually(gone(broken)).Should(BeTrue(), "the machine controller finishes the broken Machine's deletion")
		for _, m := range ms[:5] {
			Eventually(healthCheck(m)).Should(HavePrefix("True/Healthy"))
		}
		expectReplacement(ns, lbls, 10)
		var list v1beta1.MachineList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(lbls))).To(Succeed())
		kept := 0
		for _, m := range list.Items {
			key := client.ObjectKeyFromObject(&m)
			if uid, ok := uids[key]; ok {
				Expect(m.UID).To(Equal(uid), "Machine %s is the original", m.Name)
				Expect(key).NotTo(Equal(broken))
				kept++
			}
		}
		Expect(kept).To(Equal(9), "the 9 Machines that were not broken are all still there")
		Eventually(remediationAllowed(check)).Should(HavePrefix("True/WithinLimits: 0 of 10 targets failing"))
	})

	It("after an outage longer than the timeouts, replaces only the Machine whose Node never comes back, not those coming back seconds apart", func() {
		lbls := map[string]string{"pool": "recovery"}
		set := pausedSet(ns, "recovery", 10, lbls)
		ms := machines(ns, "recovery", 10, set, lbls, nil)
		allRunning(ms)
		uids := map[types.NamespacedName]types.UID{}
		for _, m := range ms {
			uids[m] = getMachine(m).UID
		}
		unpause(set)
		// 20s: long enough for a busy machine to bring three Nodes back one after the other
		// within it, short beside the outage, which outlasts it.
		c := builder.MachineHealthCheck(ns, "recovery", lbls).WithUnhealthyCondition("Ready", "False", 20).WithMaxUnhealthy("40%").Build()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		check := client.ObjectKeyFromObject(c)
		Eventually(func() int32 { return getCheck(check)().Status.CurrentHealthy }).Should(BeEquivalentTo(10))

		By("6 Nodes down for longer than the timeout: all unhealthy, none remediated")
		down, broken := ms[:5], ms[5]
		for _, m := range ms[:6] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, notReady)
		}
		Eventually(remediationAllowed(check), "60s").Should(Equal("False/TooManyUnhealthy: 6 of 10 targets failing (6 unhealthy, 0 within their timeout), " +
			"more than maxUnhealthy 40% (4) allows; remediating nothing until at most 4 are"))

		By("two Nodes back: 4 of 10 failing, within 40%; remediation resumes, the 4 get a full timeout from now")
		for _, m := range down[:2] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, nil)
		}
		Eventually(remediationAllowed(check)).Should(MatchRegexp(`^True/Resumed: 4 of 10 targets failing \(0 unhealthy, 4 within their timeout\), within maxUnhealthy 40% \(4\); ` +
			`remediation resumed at \S+ after too many targets failed: 4 failing since before then are remediated only if they still fail a full timeout after it$`))
		for _, m := range down[2:] {
			Expect(healthCheck(m)()).To(MatchRegexp(`^Unknown/Suspect: .*counted from \S+, when remediation resumed after the health check's short-circuit`))
		}

		By("three more Nodes back one after the other, seconds apart")
		for _, m := range down[2:] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, nil)
			Eventually(healthCheck(m)).Should(HavePrefix("True/Healthy"))
		}

		By("the one never coming back is replaced a full timeout after remediation resumed; no other Machine is touched")
		Eventually(removed(broken), "60s").Should(BeTrue())
		expectReplacement(ns, lbls, 10)
		Eventually(remediationAllowed(check)).Should(HavePrefix("True/WithinLimits: 0 of 10 targets failing"))
		for _, m := range ms {
			if m == broken {
				continue
			}
			got := getMachine(m)
			Expect(got.UID).To(Equal(uids[m]), "Machine %s is the original", m.Name)
			Expect(got.DeletionTimestamp.IsZero()).To(BeTrue(), "Machine %s is not being deleted", m.Name)
		}
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_remediations_started_total")).Should(Equal(map[string]float64{"": 1}))
	})

	It("gives a slot whose Machines never boot maxRetries replacements (3 Machines for maxRetries 2), then keeps the last and says so", func() {
		set := builder.MachineSet(ns, "never", 1).WithTemplateAnnotations(map[string]string{sim.NeverBootAnnotation: ""}).Build()
		lbls := set.Spec.Selector.MatchLabels
		seen := watchMachines(ns, lbls)
		Expect(k8s.Create(ctx, set)).To(Succeed())
		c := builder.MachineHealthCheck(ns, "never", lbls).WithNodeStartupTimeout(2).WithMaxUnhealthy("100%").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)}).Build()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		check := client.ObjectKeyFromObject(c)

		retriesSpent := func() string {
			return conditionOf(getCheck(check)(), v1beta1.RetriesExhaustedCondition)
		}
		Eventually(retriesSpent, "90s").Should(MatchRegexp(`^True/RetriesSpent: 1 unhealthy Machines are kept for inspection, not remediated: ` +
			`their lineage has spent maxRetries 2: never-\w{5}; delete such a Machine by hand`))
		Eventually(events(ns, "never")).Should(ContainElement(HavePrefix("Warning RetriesExhausted: 1 unhealthy Machines are kept")))

		var list v1beta1.MachineList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(lbls))).To(Succeed())
		Expect(list.Items).To(HaveLen(1), "the Machines remediated before are gone (their set deleted each once its replacement existed)")
		last := list.Items[0]
		Expect(last.DeletionTimestamp.IsZero()).To(BeTrue(), "the last Machine is kept")
		Expect(last.Annotations).To(HaveKeyWithValue(v1beta1.LineageRetriesAnnotation, "2"))
		Expect(healthCheck(client.ObjectKeyFromObject(&last))()).To(MatchRegexp(`^False/RetriesExhausted: no Node 2s after provisioning .*; not remediated: ` +
			`its lineage never-\w{5} has been remediated 2 times \(maxRetries 2\)`))
		// The last Machine's startup timeout has passed (it is judged RetriesExhausted above), so
		// nothing waits out a timeout here: that the check keeps it past the timeout, however long,
		// is stepped at the reconcile-once level (reconcile_test.go). This only checks that no
		// fourth Machine comes as the verdict lands.
		Consistently(seen).Should(HaveLen(3), "exactly 3 Machines were ever created for the slot")
	})
})

// watchMachines records the UIDs of every Machine with lbls ever seen in ns, from a watch started
// now, and returns them (for Eventually and Consistently).
func watchMachines(ns string, lbls map[string]string) func() []types.UID {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &v1beta1.MachineList{}, client.InNamespace(ns), client.MatchingLabels(lbls))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var mu sync.Mutex
	seen := map[types.UID]bool{}
	go func() {
		for e := range w.ResultChan() {
			if m, ok := e.Object.(*v1beta1.Machine); ok && e.Type != watch.Error {
				mu.Lock()
				seen[m.UID] = true
				mu.Unlock()
			}
		}
	}()
	return func() []types.UID {
		mu.Lock()
		defer mu.Unlock()
		out := make([]types.UID, 0, len(seen))
		for uid := range seen {
			out = append(out, uid)
		}
		return out
	}
}

// conditionOf returns "Status/Reason: Message" of a health check's condition t.
func conditionOf(c *v1beta1.MachineHealthCheck, t string) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return string(cond.Status) + "/" + cond.Reason + ": " + cond.Message
		}
	}
	return "<no condition>"
}
