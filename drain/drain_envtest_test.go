package drain_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

var _ = Describe("Drain", func() {
	var d *drain.Drainer
	BeforeEach(func() {
		var err error
		d, err = drain.New(env.Client, drain.Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("cordons a schedulable node once, and Uncordon makes it schedulable again", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Cordoned).To(BeTrue())
		Expect(res.Done).To(BeTrue(), "a node without pods is drained by its first step")
		Expect(f.getNode(ctx).Spec.Unschedulable).To(BeTrue())

		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Cordoned).To(BeFalse(), "an unschedulable node is not cordoned again")

		Expect(d.Uncordon(ctx, f.node)).To(Succeed())
		Expect(f.getNode(ctx).Spec.Unschedulable).To(BeFalse())
	})

	It("evicts managed pods and leaves DaemonSet and mirror pods on the node", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		ds, err := f.client.AppsV1().DaemonSets(f.namespace).Create(ctx, test.DaemonSet(f.namespace, "agent"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		f.create(ctx,
			f.pod("agent-x").OwnedByDaemonSet(ds).Label("app", "agent").Running(),
			f.pod("static-web").Mirror().Running(),
			f.pod("api-0").Running(),
			f.pod("api-1").Running())

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Evicted).To(Equal(f.keys("api-0", "api-1")))
		Expect(res.Done).To(BeFalse(), "evicted pods remain until the kubelet has stopped them")
		Expect(res.Skipped).To(ConsistOf(
			drain.SkippedPod{Pod: f.key("agent-x"), Reason: "ignoring DaemonSet-managed Pods"},
			drain.SkippedPod{Pod: f.key("static-web"), Reason: "mirror pod: the kubelet runs it from a static manifest"},
		))
		Expect(f.getPod(ctx, "api-0").DeletionTimestamp).NotTo(BeNil(), "the eviction was accepted")

		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(2))
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeTrue())
		Expect(res.Summary()).To(Equal("drained node " + f.node + "; 2 pods left in place"))
		for _, name := range []string{"agent-x", "static-web"} {
			pod := f.getPod(ctx, name)
			Expect(pod).NotTo(BeNil())
			Expect(pod.DeletionTimestamp).To(BeNil(), "pod %s must not have been evicted", name)
		}
	})

	It("names the PodDisruptionBudget that blocks an eviction, and finishes once the budget is relaxed", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		// Budgets only protect running, ready pods: the Eviction API deletes pending ones at once.
		f.create(ctx, f.pod("web-0").Label("app", "web").Running())
		// kube-controller-manager's disruption controller computes the status: 1 healthy pod and
		// minAvailable 1 allow no disruption.
		pdb, err := test.CreatePDB(ctx, f.client, test.PDB(f.namespace, "web").MinAvailable(1).Build())
		Expect(err).NotTo(HaveOccurred())
		Eventually(test.BudgetAllows(ctx, f.client, f.key("web"), 0)).Should(Succeed())

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeFalse())
		Expect(res.Evicted).To(BeEmpty())
		Expect(res.Blocked).To(HaveLen(1))
		Expect(res.Blocked[0].Cause).To(Equal(drain.CausePodDisruptionBudget))
		Expect(res.Blocked[0].PodDisruptionBudgets).To(Equal([]drain.PodDisruptionBudgetRef{{NamespacedName: f.key("web"), DisruptionsAllowed: 0}}))
		Expect(res.Summary()).To(Equal("draining node " + f.node + ": 1 pod remaining; pod " + f.namespace + "/web-0 blocked by PodDisruptionBudget " + f.namespace + "/web (allows 0 disruptions)"))
		Expect(f.getPod(ctx, "web-0").DeletionTimestamp).To(BeNil())

		By("checking that the Eviction API agrees with the prediction")
		err = f.client.PolicyV1().Evictions(f.namespace).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: "web-0"}})
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "got %v", err)

		By("relaxing the budget: once the disruption controller has observed the new generation, it allows one disruption")
		_, err = f.client.PolicyV1().PodDisruptionBudgets(f.namespace).Patch(ctx, pdb.Name, types.MergePatchType,
			[]byte(`{"spec":{"minAvailable":0}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(test.BudgetAllows(ctx, f.client, f.key("web"), 1)).Should(Succeed())

		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Evicted).To(Equal(f.keys("web-0")))
		Expect(res.Blocked).To(BeEmpty())
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeTrue())
	})

	It("on an unreachable node, evicts with a 1s grace period and stops waiting for pods stuck terminating", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node("").Ready(corev1.ConditionTrue))
		f.create(ctx,
			f.pod("stuck").Finalizer("test.machineapi.dev/stuck").Running(),
			f.pod("api-0").Running())
		DeferCleanup(func(ctx SpecContext) { Expect(test.RemoveFinalizers(ctx, f.client, f.key("stuck"))).To(Succeed()) })
		// The node controller sets Ready=Unknown when the kubelet stops reporting.
		Expect(test.SetNodeReady(ctx, f.client, f.node, corev1.ConditionUnknown)).To(Succeed())
		// The API server stamps deletion times with the wall clock; the drainer's clock starts there.
		clock := clocktesting.NewFakePassiveClock(time.Now())
		d, err := drain.New(env.Client, drain.Options{Clock: clock})
		Expect(err).NotTo(HaveOccurred())

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Unreachable).To(BeTrue())
		Expect(res.Evicted).To(Equal(f.keys("api-0", "stuck")))
		Expect(f.getPod(ctx, "stuck").DeletionGracePeriodSeconds).To(Equal(ptr.To[int64](1)))

		// No kubelet will ever stop them: both pods stay terminating.
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeFalse(), "pods terminating for less than the timeout are waited for")
		Expect(res.Terminating).To(Equal(f.keys("api-0", "stuck")))

		clock.SetTime(clock.Now().Add(time.Minute))
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeTrue())
		Expect(res.Skipped).To(HaveLen(2))
		Expect(res.Skipped[1].Pod).To(Equal(f.key("stuck")))
		Expect(res.Skipped[1].Reason).To(ContainSubstring("on an unreachable node: not waited for"))
		Expect(f.getPod(ctx, "stuck")).NotTo(BeNil(), "the drain finished although the pod is still there")
	})

	It("drains in unreachable-node mode when the options force it on a Ready node", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node("").Ready(corev1.ConditionTrue))
		f.create(ctx, f.pod("api-0").Running())
		d, err := drain.New(env.Client, drain.Options{AssumeUnreachable: true})
		Expect(err).NotTo(HaveOccurred())

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Unreachable).To(BeTrue())
		Expect(f.getPod(ctx, "api-0").DeletionGracePeriodSeconds).To(Equal(ptr.To[int64](1)))
	})

	It("does, in the step after a Plan, exactly what the Plan listed, and the Plan changes nothing", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		ds, err := f.client.AppsV1().DaemonSets(f.namespace).Create(ctx, test.DaemonSet(f.namespace, "agent"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		f.create(ctx,
			f.pod("api-0").Running(),
			f.pod("api-1").Running(),
			f.pod("orphan").Unmanaged().Running(),
			f.pod("web-0").Label("app", "web").Running(),
			f.pod("web-1").Label("app", "web").Running(),
			f.pod("scratch").EmptyDir().Running(),
			f.pod("keep").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Running(),
			f.pod("agent-x").OwnedByDaemonSet(ds).Label("app", "agent").Running(),
			f.pod("static-web").Mirror().Running())
		// The budget allows one of web-0 and web-1 to go in this step (2 healthy, minAvailable 1).
		_, err = test.CreatePDB(ctx, f.client, test.PDB(f.namespace, "web").MinAvailable(1).Build())
		Expect(err).NotTo(HaveOccurred())
		Eventually(test.BudgetAllows(ctx, f.client, f.key("web"), 1)).Should(Succeed())

		plan, err := d.Plan(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(plan.Evict).To(Equal(f.keys("api-0", "api-1", "orphan", "web-0")))
		Expect(plan.Blocked).To(HaveLen(2)) // web-1 by the budget, scratch by emptyDir
		Expect(plan.Skipped).To(HaveLen(3)) // keep, agent-x, static-web
		Expect(f.getNode(ctx).Spec.Unschedulable).To(BeFalse(), "Plan must not cordon")
		for _, name := range []string{"api-0", "api-1", "orphan", "web-0"} {
			Expect(f.getPod(ctx, name).DeletionTimestamp).To(BeNil(), "Plan must not evict %s", name)
		}

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Cordoned).To(BeTrue())
		Expect(res.Evicted).To(Equal(plan.Evict))
		Expect(res.Blocked).To(Equal(plan.Blocked))
		Expect(res.Skipped).To(Equal(plan.Skipped))
		Expect(res.Terminating).To(Equal(plan.Terminating))
		for _, key := range plan.Evict {
			Expect(f.getPod(ctx, key.Name).DeletionTimestamp).NotTo(BeNil(), "pod %s was listed for eviction", key.Name)
		}
	})

	It("returns promptly, not done, from every step while evicted pods never go away", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		f.create(ctx, f.pod("a").Running(), f.pod("b").Running(), f.pod("c").Running())

		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Evicted).To(Equal(f.keys("a", "b", "c")))
		Expect(res.Done).To(BeFalse())

		// No kubelet: the pods stay terminating. Each step returns at once and says so.
		for range 3 {
			res, err = d.Drain(ctx, f.node, drain.Step{})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Done).To(BeFalse())
			Expect(res.Evicted).To(BeEmpty(), "a terminating pod is not evicted again")
			Expect(res.Terminating).To(Equal(f.keys("a", "b", "c")))
			Expect(res.Remaining).To(Equal(f.keys("a", "b", "c")))
		}
	})
})
