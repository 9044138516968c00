package machineset_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/reconcile/conditions"
)

// onceLabel marks the sets and Machines of the reconcile-once specs, which the suite's running
// manager does not see (its Machine selector excludes the label).
const onceLabel = "test.machineapi.dev/reconcile-once"

// The reconcile-once level: the Reconciler reads from a cache of its own and writes the API server
// directly, behind its consistency guard as in the manager (expect.Reconciled waits until the
// cache shows the earlier reconciles' writes); its clock is fake, and every write it makes is
// recorded, so a spec asserts what one reconcile did and cost.
var _ = Describe("Reconciling a MachineSet once at a time", func() {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	var (
		ns            string
		writes        *expect.Writes
		newReconciler func() reconcile.Reconciler
		// newReconcilerAt is newReconciler with a clock the spec steps.
		newReconcilerAt func(*testclock.FakeClock) reconcile.Reconciler
		r               reconcile.Reconciler
		set             *v1beta1.MachineSet
	)
	BeforeEach(func() {
		ns = newNamespace()
		// The set's controller looks its Machines up by index, as in the manager; here its reads
		// go straight to the API server, so each reconcile sees the last one's writes.
		indexed, err := expect.IndexedClient(ctx, k8s, index.Register)
		Expect(err).NotTo(HaveOccurred())
		writes = expect.RecordWrites(indexed)
		newReconciler = func() reconcile.Reconciler { return newReconcilerAt(testclock.NewFakeClock(t0)) }
		newReconcilerAt = func(clock *testclock.FakeClock) reconcile.Reconciler {
			c := consistency.NewClient(writes, consistency.ClientOptions{Cache: indexed, APIReader: k8s})
			return consistency.New(consistency.Options{Controller: "machineset", Clock: clock}).Reconciler(
				&machineset.Reconciler{Deps: reconciler.Deps{Client: c, APIReader: k8s, Recorder: clientevents.NewFakeRecorder(1000), Clock: clock}})
		}
		r = newReconciler()
		set = builder.MachineSet(ns, "once", 2).WithTemplateLabels(map[string]string{onceLabel: ""}).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
	})
	live := func() []v1beta1.Machine {
		GinkgoHelper()
		var out []v1beta1.Machine
		for _, m := range machinesOf(set) {
			if m.DeletionTimestamp.IsZero() {
				out = append(out, m)
			}
		}
		return out
	}
	creates := func() int {
		n := 0
		for _, m := range machinesOf(set) {
			if len(writes.To(m.Name)) > 0 && writes.To(m.Name)[0].Verb == "create" {
				n++
			}
		}
		return n
	}

	It("creates exactly the missing Machines, then writes nothing while nothing changes", func() {
		expect.Reconciled(ctx, r, set)
		Expect(live()).To(HaveLen(2))
		Expect(creates()).To(Equal(2))
		for _, m := range live() {
			Expect(m.Finalizers).To(ContainElement(v1beta1.MachineFinalizer), "created with the machine controller's finalizer: no second write for it")
		}

		writes.Reset()
		expect.Reconciled(ctx, r, set) // counts the Machines it now sees in its status
		for _, m := range machinesOf(set) {
			Expect(writes.To(m.Name)).To(BeEmpty(), "Machine %s", m.Name)
		}
		Expect(writes.To(set.Name)).To(ConsistOf(expect.Write{Verb: "apply", Name: set.Name, Subresource: "status"}))

		Eventually(func() int32 { return getSet(set).Status.Replicas }).Should(BeEquivalentTo(2))
		writes.Reset()
		expect.Reconciled(ctx, r, set)
		Expect(writes.To(set.Name)).To(BeEmpty(), "nothing changed: nothing is written")
		for _, m := range machinesOf(set) {
			Expect(writes.To(m.Name)).To(BeEmpty(), "Machine %s", m.Name)
		}
	})

	It("remediates a Machine a health check asked it to replace: creates the replacement, carrying the lineage, then deletes it with one write", func() {
		expect.Reconciled(ctx, r, set)
		machines := live()
		Expect(machines).To(HaveLen(2))
		victim, other := machines[0], machines[1]

		// The health check's verdict, as it writes it.
		asked := metav1.NewTime(t0.Add(-time.Minute))
		verdict := metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse,
			Reason: v1beta1.RemediationRequestedReason, Message: "asked by the test", LastTransitionTime: asked}
		Expect(k8s.Status().Apply(ctx, acv1beta1.Machine(victim.Name, ns).WithStatus(acv1beta1.MachineStatus().WithConditions(
			conditions.ApplyConfiguration(verdict))), client.FieldOwner("test-health-check"))).To(Succeed())

		writes.Reset()
		expect.Reconciled(ctx, r, set)
		Expect(writes.To(victim.Name)).To(Equal([]expect.Write{{Verb: "delete", Name: victim.Name}}),
			"the set's whole cost on the remediated Machine: one delete")
		Expect(writes.To(other.Name)).To(BeEmpty())
		now := live()
		Expect(now).To(HaveLen(2), "the replacement and the other Machine")
		var replacement *v1beta1.Machine
		for i := range now {
			if now[i].Name != other.Name {
				replacement = &now[i]
			}
		}
		Expect(replacement).NotTo(BeNil())
		Expect(writes.To(replacement.Name)).To(Equal([]expect.Write{{Verb: "create", Name: replacement.Name}}),
			"the lineage is in the create: no second write")
		Expect(lineage.Of(replacement)).To(Equal(lineage.Lineage{ID: victim.Name, Retries: 1, LastRemediated: asked.UTC(), Replaces: victim.Name}))

		By("reconciled again, nothing more is created or deleted")
		writes.Reset()
		expect.Reconciled(ctx, r, set)
		Expect(live()).To(HaveLen(2))
		Expect(creates()).To(Equal(0))
		Expect(writes.To(victim.Name)).To(BeEmpty())
	})

	It("only deletes a remediated Machine whose replacement a crashed process already created", func() {
		expect.Reconciled(ctx, r, set)
		victim := live()[0]
		verdict := metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse,
			Reason: v1beta1.RemediationRequestedReason, Message: "asked by the test", LastTransitionTime: metav1.NewTime(t0)}
		Expect(k8s.Status().Apply(ctx, acv1beta1.Machine(victim.Name, ns).WithStatus(acv1beta1.MachineStatus().WithConditions(
			conditions.ApplyConfiguration(verdict))), client.FieldOwner("test-health-check"))).To(Succeed())
		made := builder.Machine(ns, "once-made").WithLabels(set.Spec.Template.Metadata.Labels).Build()
		made.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(getSet(set), v1beta1.GroupVersion.WithKind("MachineSet"))}
		made.Annotations = map[string]string{v1beta1.LineageAnnotation: victim.Name, v1beta1.LineageRetriesAnnotation: "1", v1beta1.ReplacesAnnotation: victim.Name}
		Expect(k8s.Create(ctx, made)).To(Succeed())

		// A new process: no memory of what the first one wrote.
		r = newReconciler()
		writes.Reset()
		expect.Reconciled(ctx, r, set)
		Expect(writes.To(victim.Name)).To(Equal([]expect.Write{{Verb: "delete", Name: victim.Name}}))
		Expect(creates()).To(Equal(0), "no second replacement")
		Expect(live()).To(HaveLen(2))
	})

	It("replaces a Machine that does not reach Running within machineLaunch.timeoutSeconds, up to maxRetries, then keeps and reports it", func() {
		launch := builder.MachineSet(ns, "launch", 1).WithTemplateLabels(map[string]string{onceLabel: "", "pool": "launch"}).Build()
		launch.Spec.MachineLaunch = &v1beta1.MachineLaunch{TimeoutSeconds: 600, MaxRetries: ptr.To[int32](1)}
		Expect(k8s.Create(ctx, launch)).To(Succeed())
		// The Machines' creation times are the API server's: the fake clock starts from now.
		clock := testclock.NewFakeClock(time.Now())
		r := newReconcilerAt(clock)
		set = launch
		launchCondition := func() *metav1.Condition {
			return meta.FindStatusCondition(getSet(launch).Status.Conditions, v1beta1.MachinesProvisionedCondition)
		}

		expect.Reconciled(ctx, r, launch)
		first := live()
		Expect(first).To(HaveLen(1))
		res := expect.Reconciled(ctx, r, launch) // the Machine's creation brings the set back
		Expect(res.RequeueAfter).To(BeNumerically("~", 600*time.Second, 5*time.Second), "back when the Machine's launch is due")
		Expect(launchCondition()).To(HaveField("Reason", machineset.ReasonMachinesLaunched))

		By("past the timeout, with no Node, the Machine is replaced: the replacement first, carrying the lineage, then one delete")
		clock.Step(601 * time.Second)
		writes.Reset()
		expect.Reconciled(ctx, r, launch)
		Expect(writes.To(first[0].Name)).To(Equal([]expect.Write{{Verb: "delete", Name: first[0].Name}}))
		second := live()
		Expect(second).To(HaveLen(1))
		Expect(second[0].Name).NotTo(Equal(first[0].Name))
		Expect(lineage.Of(&second[0])).To(Equal(lineage.Lineage{ID: first[0].Name, Retries: 1, Replaces: first[0].Name}))
		c := launchCondition()
		Expect(c).To(HaveField("Reason", machineset.ReasonLaunchTimedOut))
		Expect(c.Message).To(ContainSubstring(first[0].Name))

		By("the replacement stuck in turn has spent the slot's one retry: it is kept and reported")
		clock.Step(601 * time.Second)
		writes.Reset()
		expect.Reconciled(ctx, r, launch)
		Expect(writes.To(second[0].Name)).To(BeEmpty(), "kept for inspection")
		Expect(creates()).To(Equal(0), "no third Machine")
		c = launchCondition()
		Expect(c).To(HaveField("Status", metav1.ConditionFalse))
		Expect(c).To(HaveField("Reason", machineset.ReasonLaunchRetriesExhausted))
		Expect(c.Message).To(ContainSubstring(second[0].Name))

		By("once its Node is linked the set is content")
		Expect(k8s.Status().Apply(ctx, acv1beta1.Machine(second[0].Name, ns).WithStatus(acv1beta1.MachineStatus().
			WithNodeRef(acv1beta1.NodeReference().WithKind("Node").WithName("late-node"))), client.FieldOwner("test-node-linker"))).To(Succeed())
		Eventually(func() *metav1.Condition {
			expect.Reconciled(ctx, r, launch)
			return launchCondition()
		}).Should(HaveField("Reason", machineset.ReasonMachinesLaunched))
		Expect(live()).To(HaveLen(1))
	})
})
