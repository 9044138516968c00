package machinehealthcheck_test

import (
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/provider/sim"
)

var notReady = ptr.To("0s")

// The whole-behaviour specs: the manager runs, in the spec's namespace. Their unhealthy
// conditions have a timeout of 0 (unhealthy as soon as observed), so nothing waits for a timeout
// in real time; timeouts are stepped on a fake clock in reconcile_test.go.
var _ = Describe("A MachineHealthCheck", func() {
	var ns string
	BeforeEach(func() { ns = managedNamespace() })

	create := func(b *builder.MachineHealthCheckBuilder) types.NamespacedName {
		c := b.Build()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		return client.ObjectKeyFromObject(c)
	}

	It("remediates a Machine whose Node turns NotReady, has its set replace it, and leaves the others alone", func() {
		lbls := map[string]string{"pool": "web"}
		set := pausedSet(ns, "web", 3, lbls)
		ms := machines(ns, "web", 3, set, lbls, nil)
		allRunning(ms)
		check := create(builder.MachineHealthCheck(ns, "web", lbls).
			WithUnhealthyCondition("Ready", "False", 0).WithUnhealthyCondition("Ready", "Unknown", 0))
		for _, m := range ms {
			Eventually(healthCheck(m)).Should(HavePrefix("True/Healthy: Node "))
		}
		Eventually(func() v1beta1.MachineHealthCheckStatus { return getCheck(check)().Status }).Should(And(
			HaveField("ExpectedMachines", BeEquivalentTo(3)), HaveField("CurrentHealthy", BeEquivalentTo(3)),
			HaveField("Targets", ConsistOf("web-0", "web-1", "web-2"))))
		unpause(set)

		setAnnotation(ms[1], sim.NotReadyAfterAnnotation, notReady)
		Eventually(removed(ms[1])).Should(BeTrue(), "the NotReady machine is deleted")
		Eventually(events(ns, "web-1")).Should(ContainElement(
			MatchRegexp(`^Normal UnhealthyNodeCondition: remediating: Node \S+ has had Ready=False since .*, longer than 0s; MachineSet web is asked to create a replacement and delete this Machine`)))
		Eventually(gone(ms[1])).Should(BeTrue(), "the machine controller finishes the deletion")
		Expect(removed(ms[0])()).To(BeFalse())
		Expect(removed(ms[2])()).To(BeFalse())
		expectReplacement(ns, lbls, 3)
	})

	It("remediates nothing while too many Machines are unhealthy, says why, and resumes once back under the limit", func() {
		lbls := map[string]string{"pool": "outage"}
		set := pausedSet(ns, "outage", 5, lbls)
		ms := machines(ns, "outage", 5, set, lbls, nil)
		allRunning(ms)
		unpause(set)
		// The outage comes first: with a timeout of 0, a check watching Nodes go down one at a time
		// would rightly remediate the first ones while they are still within the limit.
		for _, m := range ms[:3] {
			setAnnotation(m, sim.NotReadyAfterAnnotation, notReady)
		}
		allNotReady(ms[:3])
		check := create(builder.MachineHealthCheck(ns, "outage", lbls).WithUnhealthyCondition("Ready", "False", 0).WithMaxUnhealthy("40%"))
		const why = "3 of 5 targets failing (3 unhealthy, 0 within their timeout), more than maxUnhealthy 40% (2) allows; remediating nothing until at most 2 are"
		Eventually(remediationAllowed(check)).Should(Equal("False/TooManyUnhealthy: " + why))
		Eventually(func() v1beta1.MachineHealthCheckStatus { return getCheck(check)().Status }).Should(And(
			HaveField("ExpectedMachines", BeEquivalentTo(5)), HaveField("CurrentHealthy", BeEquivalentTo(2)),
			HaveField("RemediationsAllowed", BeEquivalentTo(0))))
		for _, m := range ms[:3] {
			Eventually(healthCheck(m)).Should(MatchRegexp(`^False/RemediationNotAllowed: Node \S+ has had Ready=False since .*; not remediated: ` +
				regexp.QuoteMeta("more targets are failing than maxUnhealthy 40% (2) allows (see the health check's RemediationAllowed condition)") + `$`))
		}
		Eventually(events(ns, "outage")).Should(ContainElement("Warning RemediationNotAllowed: " + why))
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_short_circuited")).Should(Equal(map[string]float64{"": 1}))
		Expect(checkMetric(check, "machineapi_machinehealthcheck_targets")()).To(Equal(map[string]float64{"": 5}))
		Expect(checkMetric(check, "machineapi_machinehealthcheck_unhealthy")()).To(Equal(map[string]float64{"": 3}))
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_remediations_refused_total")).Should(
			Equal(map[string]float64{`reason="RemediationNotAllowed"`: 3}), "one refusal per Machine, not per reconcile")
		Consistently(removedEach(ms)).Should(HaveEach(false), "no machine is deleted while remediation is not allowed")

		By("one Node recovering brings the count back within the limit")
		setAnnotation(ms[2], sim.NotReadyAfterAnnotation, nil)
		Eventually(removed(ms[0])).Should(BeTrue())
		Eventually(removed(ms[1])).Should(BeTrue())
		Eventually(healthCheck(ms[2])).Should(HavePrefix("True/Healthy"))
		Expect(removed(ms[3])()).To(BeFalse())
		Expect(removed(ms[4])()).To(BeFalse())
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_short_circuited")).Should(Equal(map[string]float64{"": 0}))
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_remediations_started_total")).Should(Equal(map[string]float64{"": 2}))

		By("the check deleted, its series go")
		Expect(k8s.Delete(ctx, getCheck(check)())).To(Succeed())
		Eventually(checkMetric(check, "machineapi_machinehealthcheck_targets")).Should(BeEmpty())
	})

	It("with maxInFlight 1 remediates one Machine at a time", func() {
		lbls := map[string]string{"pool": "serial"}
		set := pausedSet(ns, "serial", 3, lbls)
		// A pre-drain hook holds each deletion, so a remediation stays in flight until the test
		// lets it go.
		var ms []types.NamespacedName
		for i, name := range []string{"serial-0", "serial-1", "serial-2"} {
			m := builder.Machine(ns, name).WithLabels(lbls).WithPreDrainHook("hold", "test").Build()
			m.OwnerReferences = machinesOwnedBy(set)
			Expect(k8s.Create(ctx, m)).To(Succeed(), "machine %d", i)
			ms = append(ms, client.ObjectKeyFromObject(m))
		}
		allRunning(ms)
		unpause(set)
		setAnnotation(ms[0], sim.NotReadyAfterAnnotation, notReady)
		setAnnotation(ms[1], sim.NotReadyAfterAnnotation, notReady)
		allNotReady(ms[:2]) // both unhealthy when the check first looks: name order decides
		check := create(builder.MachineHealthCheck(ns, "serial", lbls).WithUnhealthyCondition("Ready", "False", 0).
			WithMaxUnhealthy("100%").WithMaxInFlight("1"))

		Eventually(removed(ms[0])).Should(BeTrue(), "the first by name is remediated")
		Eventually(healthCheck(ms[1])).Should(MatchRegexp(
			`^False/WaitingForRemediation: .*; not remediated: waiting for a remediation in progress to finish \(maxInFlight 1\)$`))
		Eventually(remediationAllowed(check)).Should(HaveSuffix("; 1 remediations in progress (maxInFlight 1)"))
		Consistently(removed(ms[1])).Should(BeFalse(), "the second waits while the first is in flight")

		By("the first deletion finishing frees the slot")
		releaseHook(ms[0])
		Eventually(gone(ms[0])).Should(BeTrue())
		Eventually(removed(ms[1])).Should(BeTrue())
		Expect(removed(ms[2])()).To(BeFalse())
		releaseHook(ms[1])
	})

	It("with a remediation template creates a request for an unhealthy Machine and removes it once the Machine is healthy", func() {
		lbls := map[string]string{"pool": "ext"}
		ms := machines(ns, "ext", 2, nil, lbls, nil) // no MachineSet: external remediation does not need one
		allRunning(ms)
		Expect(k8s.Create(ctx, remediationTemplate(ns, "reboot"))).To(Succeed())
		create(builder.MachineHealthCheck(ns, "ext", lbls).WithUnhealthyCondition("Ready", "False", 0).
			WithMaxUnhealthy("1").WithRemediationTemplate(testGroupVersion, "TestRemediationTemplate", "reboot"))

		setAnnotation(ms[0], sim.NotReadyAfterAnnotation, notReady)
		m0 := getMachine(ms[0])
		Eventually(request(ns, "ext-0")).Should(And(
			HaveKeyWithValue("spec", map[string]any{"action": "reboot"}),
			HaveKeyWithValue("metadata", And(
				HaveKeyWithValue("labels", map[string]any{"remediator": "test"}),
				HaveKeyWithValue("ownerReferences", ConsistOf(And(
					HaveKeyWithValue("kind", "Machine"), HaveKeyWithValue("name", "ext-0"), HaveKeyWithValue("uid", string(m0.UID)))))))))
		Eventually(healthCheck(ms[0])).Should(MatchRegexp(
			`^False/Remediating: .*; remediating: requested external remediation TestRemediation ext-0 \(from TestRemediationTemplate reboot\)$`))
		Expect(request(ns, "ext-1")()).To(BeNil())
		Consistently(removed(ms[0])).Should(BeFalse(), "external remediation does not delete the machine")

		By("the Machine recovering removes its request")
		setAnnotation(ms[0], sim.NotReadyAfterAnnotation, nil)
		Eventually(request(ns, "ext-0")).Should(BeNil(), func() string { return "HealthCheckSucceeded: " + healthCheck(ms[0])() + "; " + nodeConditions(ms[0]) })
		Eventually(healthCheck(ms[0])).Should(HavePrefix("True/Healthy"))
	})

	It("counts external requests in flight against maxInFlight", func() {
		lbls := map[string]string{"pool": "extserial"}
		ms := machines(ns, "xs", 3, nil, lbls, map[string]string{sim.NotReadyAfterAnnotation: "0s"})
		allNotReady(ms) // all unhealthy when the check first looks: name order decides
		Expect(k8s.Create(ctx, remediationTemplate(ns, "reboot"))).To(Succeed())
		create(builder.MachineHealthCheck(ns, "extserial", lbls).WithUnhealthyCondition("Ready", "False", 0).
			WithMaxUnhealthy("100%").WithMaxInFlight("2").WithRemediationTemplate(testGroupVersion, "TestRemediationTemplate", "reboot"))
		Eventually(request(ns, "xs-0")).ShouldNot(BeNil())
		Eventually(request(ns, "xs-1")).ShouldNot(BeNil())
		Eventually(healthCheck(ms[2])).Should(HavePrefix("False/WaitingForRemediation"))
		Consistently(request(ns, "xs-2")).Should(BeNil())
	})

	It("does not delete a Machine that no MachineSet owns, and says how to remediate it", func() {
		lbls := map[string]string{"pool": "lonely"}
		ms := machines(ns, "lonely", 1, nil, lbls, nil)
		allRunning(ms)
		create(builder.MachineHealthCheck(ns, "lonely", lbls).WithUnhealthyCondition("Ready", "False", 0).WithMaxUnhealthy("1"))
		setAnnotation(ms[0], sim.NotReadyAfterAnnotation, notReady)
		Eventually(healthCheck(ms[0])).Should(MatchRegexp(`^False/NotOwnedByMachineSet: .*remediate it manually`))
		Consistently(removed(ms[0])).Should(BeFalse())
	})

	It("does nothing while paused", func() {
		lbls := map[string]string{"pool": "paused"}
		set := pausedSet(ns, "paused", 1, lbls)
		ms := machines(ns, "paused", 1, set, lbls, map[string]string{sim.NotReadyAfterAnnotation: "0s"})
		unpause(set)
		check := create(builder.MachineHealthCheck(ns, "paused", lbls).WithUnhealthyCondition("Ready", "False", 0).
			WithMaxUnhealthy("1").WithAnnotations(map[string]string{v1beta1.PausedAnnotation: ""}))
		Eventually(func() *v1beta1.Machine { return getMachine(ms[0]) }).Should(HaveField("Status.NodeRef", Not(BeNil())))
		Consistently(removed(ms[0])).Should(BeFalse())
		Expect(healthCheck(ms[0])()).To(Equal("<no condition>"))
		Expect(getCheck(check)().Status).To(Equal(v1beta1.MachineHealthCheckStatus{}))

		By("unpausing lets it act")
		Eventually(func() error {
			c := getCheck(check)()
			delete(c.Annotations, v1beta1.PausedAnnotation)
			return k8s.Update(ctx, c)
		}).Should(Succeed())
		Eventually(removed(ms[0])).Should(BeTrue())
	})

	It("replaces the never-booting Machine of a one-replica set with a check left at its defaults", func() {
		set := builder.MachineSet(ns, "single", 1).WithTemplateAnnotations(map[string]string{sim.NeverBootAnnotation: ""}).Build()
		lbls := set.Spec.Selector.MatchLabels
		seen := watchMachines(ns, lbls)
		Expect(k8s.Create(ctx, set)).To(Succeed())
		// Defaults but for the startup timeout (600s by default), so that the spec does not wait
		// ten minutes; maxUnhealthy is left at 40%, which rounds 1 Machine down to 0.
		check := create(builder.MachineHealthCheck(ns, "single", lbls).WithNodeStartupTimeout(2).
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](1)}))
		Eventually(seen, "60s").Should(HaveLen(2), "the first Machine is replaced once")
		Eventually(remediationAllowed(check)).Should(ContainSubstring(
			"within maxUnhealthy 40% (1: 40% of 1 targets rounds down to 0, and a percentage allows at least 1)"))
		Eventually(func() string { return conditionOf(getCheck(check)(), v1beta1.RetriesExhaustedCondition) }, "60s").Should(
			HavePrefix("True/RetriesSpent: 1 unhealthy Machines are kept for inspection"), "maxRetries 1: the replacement is kept and reported")
		Consistently(seen).Should(HaveLen(2))
	})
})
