package machinedeployment_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/provider/sim"
)

// upToDate returns "status/reason" of a Machine's UpToDate condition, and its message.
func upToDate(m *v1beta1.Machine) (string, string) {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.UpToDateCondition)
	if c == nil {
		return "<none>", ""
	}
	return string(c.Status) + "/" + c.Reason, c.Message
}

// liveUpToDate maps each not deleting Machine of ns to "status/reason" of its UpToDate condition.
func liveUpToDate(ns string) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for _, m := range machines(ns) {
			if m.DeletionTimestamp.IsZero() {
				out[m.Name], _ = upToDate(&m)
			}
		}
		return out
	}
}

func upToDateReplicas(md *v1beta1.MachineDeployment) func() int32 {
	return func() int32 { return getMD(md).Status.UpToDateReplicas }
}

func drainTimeout(m *v1beta1.Machine) int32 {
	if m.Spec.Deletion == nil || m.Spec.Deletion.NodeDrainTimeoutSeconds == nil {
		return -1
	}
	return *m.Spec.Deletion.NodeDrainTimeoutSeconds
}

func preDrainHooks(m *v1beta1.Machine) []string {
	var out []string
	for _, h := range m.Spec.LifecycleHooks.PreDrain {
		out = append(out, h.Name)
	}
	slices.Sort(out)
	return out
}

func allOf(values map[string]string) []string {
	var out []string
	for _, v := range values {
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var _ = Describe("Day-2 changes of a MachineDeployment", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("updates deletion settings in place, on a Machine held in deletion too, and template hooks on running Machines only", func() {
		md := builder.MachineDeployment(ns, "pool", 3).WithDeletion(v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](60)}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		before := setNames(ns)

		By("a Machine is held in deletion by a preDrain hook its owner has not removed")
		held := machines(ns)[0]
		mergePatch(&held, `{"spec":{"lifecycleHooks":{"preDrain":[{"name":"hold","owner":"test"}]}}}`)
		Expect(k8s.Delete(ctx, &held)).To(Succeed())
		Eventually(func() []string { return live(ns) }).Should(HaveLen(3), "the set replaces it")
		deleting := func() *v1beta1.Machine {
			m := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&held), m)).To(Succeed())
			Expect(m.DeletionTimestamp.IsZero()).To(BeFalse())
			return m
		}
		Eventually(func() string {
			c := meta.FindStatusCondition(deleting().Status.Conditions, v1beta1.DeletingCondition)
			if c == nil {
				return ""
			}
			return c.Reason
		}).Should(Equal("WaitingForPreDrainHooks"))

		By("a new nodeDrainTimeoutSeconds reaches every Machine, the deleting one included, without a MachineSet")
		mergePatch(md, `{"spec":{"template":{"spec":{"deletion":{"nodeDrainTimeoutSeconds":900}}}}}`)
		Eventually(func() []int32 {
			var out []int32
			for _, m := range machines(ns) {
				out = append(out, drainTimeout(&m))
			}
			return out
		}).Should(HaveEach(int32(900)))
		Expect(machines(ns)).To(HaveLen(4), "three running and the one held in deletion")
		Expect(setNames(ns)).To(Equal(before), "no MachineSet was created")
		Expect(sets(ns)[0].Spec.Template.Spec.Deletion.NodeDrainTimeoutSeconds).To(HaveValue(Equal(int32(900))))

		By("a preDrain hook added to the template reaches the running Machines and not the deleting one")
		mergePatch(md, `{"spec":{"template":{"spec":{"lifecycleHooks":{"preDrain":[{"name":"backup","owner":"backup-operator"}]}}}}}`)
		Eventually(func() [][]string {
			var out [][]string
			for _, m := range machines(ns) {
				if m.DeletionTimestamp.IsZero() {
					out = append(out, preDrainHooks(&m))
				}
			}
			return out
		}).Should(HaveEach(Equal([]string{"backup"})))
		Expect(preDrainHooks(deleting())).To(Equal([]string{"hold"}), "a hook is never added to a deleting Machine")
		Expect(setNames(ns)).To(Equal(before), "no MachineSet was created")
		Expect(liveUpToDate(ns)()).To(HaveEach("True/"+uptodate.ReasonUpToDate), "in-place fields do not make a Machine out of date")

		By("once its owner removes the hook, the held Machine goes")
		mergePatch(deleting(), `{"spec":{"lifecycleHooks":{"preDrain":null}}}`)
		Eventually(func() int { return len(machines(ns)) }).Should(Equal(3))
	})

	It("replaces a Machine that never boots after machineLaunch.timeoutSeconds, bounded by maxRetries, without a health check, and keeps the last one", func() {
		md := builder.MachineDeployment(ns, "stuck", 1).WithTemplateAnnotations(map[string]string{sim.NeverBootAnnotation: ""}).Build()
		md.Spec.MachineLaunch = &v1beta1.MachineLaunch{TimeoutSeconds: 2, MaxRetries: ptr.To[int32](2)}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		launched := func() string {
			list := sets(ns)
			if len(list) != 1 {
				return fmt.Sprintf("%d MachineSets", len(list))
			}
			c := meta.FindStatusCondition(list[0].Status.Conditions, v1beta1.MachinesProvisionedCondition)
			if c == nil {
				return "<none>"
			}
			return string(c.Status) + "/" + c.Reason
		}
		Eventually(launched).Should(Equal("False/" + "LaunchRetriesExhausted"))
		kept := live(ns)
		Expect(kept).To(HaveLen(1))
		m := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept[0]}, m)).To(Succeed())
		Expect(lineage.Of(m).Retries).To(Equal(2), "the first Machine and two replacements")
		Expect(m.Status.NodeRef).To(BeNil())
		Consistently(func() []string { return live(ns) }, "5s").Should(Equal(kept), "no third replacement")
		Expect(expect.EventReasons(ctx, k8s, &sets(ns)[0])).To(ContainElement("LaunchTimedOut"))

		By("dropping machineLaunch from the deployment reaches its set in place and removes the condition")
		before := setNames(ns)
		mergePatch(md, `{"spec":{"machineLaunch":null}}`)
		Eventually(launched).Should(Equal("<none>"))
		Expect(setNames(ns)).To(Equal(before), "no rollout")
		Expect(live(ns)).To(Equal(kept))
	})

	It("says which Machines are not up to date with a new providerSpec, counts the others, and all are after the rollout", func() {
		md := builder.MachineDeployment(ns, "app", 3).WithStrategy(v1beta1.OnDeleteStrategy).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(3)))
		Expect(allOf(liveUpToDate(ns)())).To(Equal([]string{"True/" + uptodate.ReasonUpToDate}))

		setInstanceType(md, "large")
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"False/" + uptodate.ReasonTemplateChanged}))
		for _, m := range machines(ns) {
			_, msg := upToDate(&m)
			Expect(msg).To(Equal(`differs from the template of MachineDeployment app: spec.providerSpec.value.instanceType: "small" → "large"`))
		}
		Eventually(upToDateReplicas(md)).Should(BeZero())

		By("a Machine of the new template is up to date; upToDateReplicas counts it")
		victim := machines(ns)[0]
		Expect(k8s.Delete(ctx, &victim)).To(Succeed())
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 2, "large": 1}))
		Eventually(func() map[string]int {
			out := map[string]int{}
			for _, m := range machines(ns) {
				if m.DeletionTimestamp.IsZero() {
					c, _ := upToDate(&m)
					out[instanceType(&m)+" "+c]++
				}
			}
			return out
		}).Should(Equal(map[string]int{"small False/" + uptodate.ReasonTemplateChanged: 2, "large True/" + uptodate.ReasonUpToDate: 1}))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(1)))
		Eventually(func() map[string]int32 {
			out := map[string]int32{}
			for _, s := range sets(ns) {
				out["revision "+s.Annotations[v1beta1.RevisionAnnotation]] = s.Status.UpToDateReplicas
			}
			return out
		}).Should(Equal(map[string]int32{"revision 1": 0, "revision 2": 1}), "the old set has none, the new one its Machine")

		By("after the rollout every Machine is up to date")
		mergePatch(md, `{"spec":{"strategy":{"type":"RollingUpdate"}}}`)
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 3}))
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"True/" + uptodate.ReasonUpToDate}))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(3)))
	})

	It("rolls the Machines of an edited MachineClass onto it through the strategy, naming the class while they wait", func() {
		Expect(k8s.Create(ctx, builder.MachineClass(ns, "workers", "small"))).To(Succeed())
		md := builder.MachineDeployment(ns, "classy", 2).WithMachineClass("workers").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"True/" + uptodate.ReasonUpToDate}))
		old := live(ns)
		for _, m := range machines(ns) {
			Expect(m.Status.MachineClass).NotTo(BeNil(), "the class is recorded when the instance is created")
			Expect(m.Status.MachineClass.Name).To(Equal("workers"))
		}
		mergePatch(md, `{"spec":{"paused":true}}`) // so the Machines wait and their condition can be read
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("Unknown/DeploymentPaused"))

		class := &v1beta1.MachineClass{}
		class.Namespace, class.Name = ns, "workers"
		mergePatch(class, `{"spec":{"providerSpec":{"instanceType":"medium"}}}`)
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"False/" + uptodate.ReasonMachineClassChanged}))
		for _, m := range machines(ns) {
			_, msg := upToDate(&m)
			Expect(msg).To(Equal("MachineClass workers changed since the instance was created: spec.providerSpec.instanceType"))
		}
		Eventually(upToDateReplicas(md)).Should(BeZero())

		s := sample(ns)
		mergePatch(md, `{"spec":{"paused":false}}`)
		Eventually(func() []string { return live(ns) }).Should(And(HaveLen(2), Not(ContainElement(BeElementOf(old)))))
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"True/" + uptodate.ReasonUpToDate}))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(2)))
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		minReady, maxLive, _ := s.Stop()
		Expect(minReady).To(BeNumerically(">=", 2), "maxUnavailable 0: never fewer than 2 ready")
		Expect(maxLive).To(BeNumerically("<=", 3), "maxSurge 1: never more than 3")
		Expect(setNames(ns)).To(HaveLen(1), "the template did not change: the set stays, its Machines are replaced")
		Eventually(func() []string {
			var out []string
			for _, m := range machines(ns) {
				if node := nodeOf(&m); node != nil && m.DeletionTimestamp.IsZero() {
					out = append(out, node.Status.Capacity.Cpu().String())
				}
			}
			return out
		}).Should(Equal([]string{"4", "4"}), "the replacements run the medium instance type")
	})

	It("leaves the Machines of an edited MachineClass when machineClassChanges is Ignore, and says so", func() {
		Expect(k8s.Create(ctx, builder.MachineClass(ns, "stable", "small"))).To(Succeed())
		md := builder.MachineDeployment(ns, "keep", 2).WithMachineClass("stable").
			WithRollout(v1beta1.MachineDeploymentRollout{MachineClassChanges: v1beta1.MachineClassChangeIgnore}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(2)))
		old := live(ns)

		class := &v1beta1.MachineClass{}
		class.Namespace, class.Name = ns, "stable"
		mergePatch(class, `{"spec":{"providerSpec":{"instanceType":"medium"}}}`)
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"False/" + uptodate.ReasonMachineClassChanged}))
		for _, m := range machines(ns) {
			_, msg := upToDate(&m)
			Expect(msg).To(ContainSubstring("MachineClass stable changed since the instance was created: spec.providerSpec.instanceType (not replaced: spec.rollout.machineClassChanges is Ignore)"))
		}
		Eventually(upToDateReplicas(md)).Should(BeZero())
		Consistently(func() []string { return live(ns) }, "2s").Should(Equal(old), "nothing is replaced")
		Expect(condition(md, v1beta1.ProgressingCondition)()).To(Equal("True/NewMachineSetAvailable"))

		By("a Machine created after the edit gets the edited class and is up to date")
		mergePatch(md, `{"spec":{"replicas":3}}`)
		Eventually(func() map[string]string { return liveUpToDate(ns)() }).Should(HaveLen(3))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(1)))
	})

	It("replaces every Machine created before rollout.after once it has passed, within maxSurge and maxUnavailable", func() {
		md := builder.MachineDeployment(ns, "rotate", 4).WithRollingUpdate("1", "1").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("4/4/4/4"))
		old := live(ns)
		var latest time.Time
		for _, m := range machines(ns) {
			Expect(m.Status.ProvisionedTime).NotTo(BeNil())
			latest = later(latest, m.Status.ProvisionedTime.Time)
		}
		// The second after the last instance was created: in the past a moment later.
		after := metav1.NewTime(latest.Add(time.Second))
		raw, err := after.MarshalJSON()
		Expect(err).NotTo(HaveOccurred())

		s := sample(ns)
		mergePatch(md, `{"spec":{"rollout":{"after":`+string(raw)+`}}}`)
		Eventually(func() []string { return live(ns) }).Should(And(HaveLen(4), Not(ContainElement(BeElementOf(old)))))
		Eventually(status(md)).Should(Equal("4/4/4/4"))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(4)))
		minReady, maxLive, _ := s.Stop()
		Expect(minReady).To(BeNumerically(">=", 3), "maxUnavailable 1: never fewer than 3 ready")
		Expect(maxLive).To(BeNumerically("<=", 5), "maxSurge 1: never more than 5")
		for _, m := range machines(ns) {
			if m.DeletionTimestamp.IsZero() {
				Expect(m.Status.ProvisionedTime.Before(&after)).To(BeFalse(), "every instance is from after rollout.after")
			}
		}
		Expect(setNames(ns)).To(HaveLen(1), "the template did not change")
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("True/NewMachineSetAvailable"))
	})
})

// The manager runs on a fake clock here, so that Machines are older than machineMaxAgeSeconds
// because the test stepped the clock, not because it waited.
var _ = Describe("machineMaxAgeSeconds on the controllers' clock", Ordered, func() {
	var clock *testclock.FakeClock
	BeforeAll(func() { clock = onFakeClock() })

	It("replaces only the Machines whose instance is older than machineMaxAgeSeconds", func() {
		ns := newNamespace()
		md := builder.MachineDeployment(ns, "aging", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		old := live(ns)

		clock.Step(2 * time.Hour)
		mergePatch(md, `{"spec":{"replicas":3}}`)
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		var young string
		for _, name := range live(ns) {
			if !slices.Contains(old, name) {
				young = name
			}
		}
		Expect(young).NotTo(BeEmpty())

		mergePatch(md, `{"spec":{"rollout":{"machineMaxAgeSeconds":3600}}}`)
		Eventually(func() []string { return live(ns) }).Should(And(HaveLen(3), ContainElement(young), Not(ContainElement(BeElementOf(old)))))
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		Eventually(func() []string { return allOf(liveUpToDate(ns)()) }).Should(Equal([]string{"True/" + uptodate.ReasonUpToDate}))
		Eventually(upToDateReplicas(md)).Should(Equal(int32(3)))
		replaced := live(ns)
		Consistently(func() []string { return live(ns) }, "2s").Should(Equal(replaced), "the replacements and the young Machine are kept")
		Expect(setNames(ns)).To(HaveLen(1))

		By("an hour later on the clock, they are all too old")
		clock.Step(time.Hour)
		mergePatch(md, `{"metadata":{"annotations":{"example.com/poke":"1"}}}`) // an event: no real hour passes for the requeue
		Eventually(func() []string { return live(ns) }).Should(And(HaveLen(3), Not(ContainElement(BeElementOf(replaced)))))
	})
})

// The disruption budget paces every reason at once: the deployment's sets share it.
var _ = Describe("A disruption budget on the controllers' clock", Ordered, func() {
	var clock *testclock.FakeClock
	BeforeAll(func() { clock = onFakeClock() })

	It("replaces a class edit and expired Machines of 6 no more than one at a time under a budget of 1, where maxUnavailable allows 3", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, builder.MachineClass(ns, "workers", "small"))).To(Succeed())
		md := builder.MachineDeployment(ns, "paced", 6).WithMachineClass("workers").WithRollingUpdate("3", "3").Build()
		md.Spec.Disruption = &v1beta1.Disruption{Budgets: []v1beta1.DisruptionBudget{{Name: "one", Nodes: intstr.FromInt32(1)}}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("6/6/6/6"))
		old := live(ns)

		s := sample(ns)
		clock.Step(2 * time.Hour)
		mergePatch(md, `{"spec":{"rollout":{"machineMaxAgeSeconds":3600}}}`)
		class := &v1beta1.MachineClass{}
		class.Namespace, class.Name = ns, "workers"
		mergePatch(class, `{"spec":{"providerSpec":{"instanceType":"medium"}}}`)
		Eventually(func() []string { return live(ns) }, "120s").Should(And(HaveLen(6), Not(ContainElement(BeElementOf(old)))))
		Eventually(status(md)).Should(Equal("6/6/6/6"))
		Expect(s.MostDisrupting()).To(HaveLen(1), "the budget's one Machine at a time, whatever the reason")
		Expect(s.Deleted()).To(HaveEach(BeElementOf(old)), "only the old Machines go: no replacement is made twice for one the budget holds")
		s.Stop()
	})

	It("holds a rollout while a window of nodes 0 is open, and goes on once it closes", func() {
		ns := newNamespace()
		// A window that opened at the start of the clock's current minute, for an hour.
		now := clock.Now().UTC()
		md := builder.MachineDeployment(ns, "frozen", 2).Build()
		md.Spec.Disruption = &v1beta1.Disruption{Budgets: []v1beta1.DisruptionBudget{{
			Name: "change-freeze", Nodes: intstr.FromInt32(0), Reasons: []v1beta1.DisruptionReason{v1beta1.DisruptionRollout},
			Schedule: fmt.Sprintf("%d %d * * *", now.Minute(), now.Hour()), DurationSeconds: ptr.To[int32](3600),
		}}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		old := live(ns)

		mergePatch(md, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"large"}}}}}}`)
		Eventually(func() []string { return setNames(ns) }).Should(HaveLen(2))
		Eventually(func() int { return len(live(ns)) }).Should(BeNumerically(">", 2), "the new set surges")
		deleting := func() []string {
			var out []string
			for _, m := range machines(ns) {
				if !m.DeletionTimestamp.IsZero() {
					out = append(out, m.Name)
				}
			}
			return out
		}
		Consistently(deleting, "3s").Should(BeEmpty(), "no old Machine goes while the window is open")

		By("the window closes")
		clock.Step(time.Hour)
		Eventually(func() []string { return live(ns) }, "60s").Should(And(HaveLen(2), Not(ContainElement(BeElementOf(old)))))
	})
})

// onFakeClock restarts the suite's manager on a fake clock, for the rest of an Ordered container,
// and back on the real one after it.
func onFakeClock() *testclock.FakeClock {
	GinkgoHelper()
	provider := st.Provider
	Expect(st.Stop()).To(Succeed())
	clock := testclock.NewFakeClock(time.Now().Truncate(time.Second))
	var err error
	st, err = stack.Start(env.Config, stack.Options{Provider: provider, Clock: clock})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		Expect(st.Stop()).To(Succeed())
		st, err = stack.Start(env.Config, stack.Options{Provider: provider})
		Expect(err).NotTo(HaveOccurred())
	})
	return clock
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
