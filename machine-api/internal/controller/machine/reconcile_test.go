package machine_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machine"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/provider/sim"
)

// The reconcile-once level: the Reconciler is built by hand with a fake clock and a client
// straight to the API server, and no manager runs. Each Reconcile call is one step the test
// asserts on; the clock only moves when the test steps it, so timeouts are stepped, not waited.
var _ = Describe("Reconciling a Machine once at a time", func() {
	// t0 has whole seconds: the API server keeps times to the second.
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	var (
		f     *onceFixture
		ns    string
		clock *testclock.FakeClock
		cloud *sim.Provider
		r     *machine.Reconciler
	)
	BeforeEach(func() {
		f = newOnceFixture(t0)
		ns, clock, cloud, r = f.ns, f.clock, f.cloud, f.r
	})
	conditionOf := func(m *v1beta1.Machine, t string) metav1.Condition { GinkgoHelper(); return f.conditionOf(m, t) }
	linkNode := func(m *v1beta1.Machine) *corev1.Node { GinkgoHelper(); return f.linkNode(m) }
	running := func(b *builder.MachineBuilder) (*v1beta1.Machine, *corev1.Node) { GinkgoHelper(); return f.running(b) }

	It("adds the finalizer, persists Provisioning before the first Create, creates, and runs once linked", func() {
		m := builder.Machine(ns, "steps").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())

		By("the first reconcile only adds the finalizer")
		Expect(expect.Reconciled(ctx, r, m)).To(BeZero())
		Expect(expect.Fetched(ctx, k8s, m).Finalizers).To(ConsistOf(v1beta1.MachineFinalizer))
		Expect(m.Status.Phase).To(BeEmpty())

		By("the second persists Provisioning, then creates the instance and records it")
		phaseAtCreate := &phaseAtCreate{Provider: cloud, k8s: k8s}
		r.Provider = phaseAtCreate
		clock.Step(time.Minute)
		expect.Reconciled(ctx, r, m)
		Expect(phaseAtCreate.phases).To(Equal([]v1beta1.MachinePhase{v1beta1.MachinePhaseProvisioning}),
			"Create is called once Provisioning is stored, not before")
		Expect(cloud.Instances()).To(HaveLen(1))
		Expect(expect.Fetched(ctx, k8s, m).Spec.ProviderID).To(HavePrefix(sim.ProviderIDPrefix))
		Expect(m.Status.Phase).To(Equal(v1beta1.MachinePhaseProvisioned))
		Expect(m.Status.ProvisionedTime.Time).To(BeTemporally("==", t0.Add(time.Minute)), "times come from the injected clock")
		c := conditionOf(m, v1beta1.InstanceProvisionedCondition)
		Expect(c.Status).To(Equal(metav1.ConditionTrue))
		Expect(c.LastTransitionTime.Time).To(BeTemporally("==", t0.Add(time.Minute)))
		Expect(c.Message).To(Equal("instance " + m.Spec.ProviderID + " exists"))
		Expect(f.events()).To(BeEmpty(), "creating the instance is routine progress: the condition says it, no event")
		Expect(f.series("machineapi_machine_provisioning_oldest_seconds")).To(HaveKey(f.labels("phase", "Provisioned")))

		By("nothing is written while nothing changes")
		rv := m.ResourceVersion
		clock.Step(time.Minute)
		expect.Reconciled(ctx, r, m)
		Expect(expect.Fetched(ctx, k8s, m).ResourceVersion).To(Equal(rv))

		By("linked to a Ready Node, it runs, and the time it took is observed")
		linkNode(m)
		clock.Step(time.Minute)
		observed := provisioningObservations()
		expect.Reconciled(ctx, r, m)
		Expect(expect.Fetched(ctx, k8s, m).Status.Phase).To(Equal(v1beta1.MachinePhaseRunning))
		Expect(provisioningObservations()).To(BeNumerically(">", observed))
		Expect(f.series("machineapi_machine_provisioning_oldest_seconds")).To(BeEmpty(), "no Machine of the namespace is on its way any more")
		c = conditionOf(m, v1beta1.ReadyCondition)
		Expect(c.Reason).To(Equal(machine.ReasonNodeReady))
		Expect(c.LastTransitionTime.Time).To(BeTemporally("==", t0.Add(3*time.Minute)))
		Expect(conditionOf(m, v1beta1.NodeLinkedCondition).Reason).To(Equal("Linked"), "the node linker's condition is left as it wrote it")
		Expect(cloud.Instances()).To(HaveLen(1), "no second instance")
		Expect(f.events()).To(BeEmpty(), "Running is in the status (phase, Ready and its transition time): no event")
	})

	It("holds deletion on a pre-drain hook without touching the Node", func() {
		m, node := running(builder.Machine(ns, "hooked").WithPreDrainHook("backup", "backup-operator"))
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Expect(expect.Reconciled(ctx, r, m)).To(BeZero(), "the hook's removal brings the Machine back: no timed requeue")
		Expect(conditionOf(m, v1beta1.DeletingCondition).Reason).To(Equal(machine.ReasonWaitingForPreDrainHooks))
		Expect(f.series("machineapi_drains_blocked")).To(Equal(map[string]float64{f.labels("reason", machine.HoldPreDrainHook): 1}))
		Expect(f.series("machineapi_drains_in_progress")).To(BeEmpty(), "the drain has not started")
		Expect(expect.Fetched(ctx, k8s, node).Spec.Unschedulable).To(BeFalse(), "not cordoned while the hook holds")
		Expect(cloud.Instances()).To(HaveLen(1))
	})

	It("gives up draining when nodeDrainTimeoutSeconds has passed since the drain started, and goes on", func() {
		m, node := running(builder.Machine(ns, "drain-timeout").WithDeletion(v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptrTo[int32](600)}))
		runPod(ns, "blocked", node.Name, map[string]string{"app": "blocked"})
		blockingPDB(ns, "blocked", map[string]string{"app": "blocked"}, 1)
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		drainStart := clock.Now()

		res := expect.Reconciled(ctx, r, m)
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "the drain polls")
		Expect(conditionOf(m, v1beta1.DeletingCondition).Reason).To(Equal(machine.ReasonDrainingNode))
		Expect(conditionOf(m, v1beta1.DrainedCondition).Reason).To(Equal(machine.ReasonDraining))
		Expect(m.Status.Deletion.NodeDrainStartTime.Time).To(BeTemporally("==", drainStart), "the start is recorded, so the timeout survives restarts")
		Expect(expect.Fetched(ctx, k8s, node).Spec.Unschedulable).To(BeTrue(), "cordoned")

		By("short of the timeout it still drains")
		clock.Step(9 * time.Minute)
		expect.Reconciled(ctx, r, m)
		Expect(conditionOf(m, v1beta1.DrainedCondition).Reason).To(Equal(machine.ReasonDraining))
		Expect(cloud.Instances()).To(HaveLen(1))

		By("past it, the drain gives up and the instance, the Node and the Machine go")
		clock.Step(time.Minute)
		expect.Reconciled(ctx, r, m)
		Expect(cloud.Instances()).To(BeEmpty())
		Expect(gone(node)()).To(BeTrue())
		Expect(gone(m)()).To(BeTrue())
	})

	It("waits for volumes to detach until nodeVolumeDetachTimeoutSeconds, then goes on", func() {
		m, node := running(builder.Machine(ns, "volumes").WithDeletion(v1beta1.MachineDeletionSpec{NodeVolumeDetachTimeoutSeconds: ptrTo[int32](60)}))
		expect.Fetched(ctx, k8s, node).Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/disk-1", DevicePath: "/dev/sdb"}}
		Expect(k8s.Status().Update(ctx, node)).To(Succeed())
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		expect.Reconciled(ctx, r, m)
		Expect(conditionOf(m, v1beta1.DeletingCondition).Reason).To(Equal(machine.ReasonWaitingForVolumeDetach))
		Expect(conditionOf(m, v1beta1.DrainedCondition).Reason).To(Equal(machine.ReasonDrained), "an empty Node drains at once")
		Expect(m.Status.Deletion.WaitForNodeVolumeDetachStartTime.Time).To(BeTemporally("==", clock.Now()))

		clock.Step(59 * time.Second)
		expect.Reconciled(ctx, r, m)
		Expect(conditionOf(m, v1beta1.DeletingCondition).Reason).To(Equal(machine.ReasonWaitingForVolumeDetach))
		Expect(cloud.Instances()).To(HaveLen(1))

		clock.Step(time.Second)
		expect.Reconciled(ctx, r, m)
		Expect(cloud.Instances()).To(BeEmpty())
		Expect(gone(m)()).To(BeTrue())
	})

	It("retries removing the finalizer after a conflict without an error", func() {
		m, _ := running(builder.Machine(ns, "conflict").WithAnnotations(map[string]string{v1beta1.ExcludeNodeDrainingAnnotation: ""}))
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		stale := expect.Fetched(ctx, k8s, m).DeepCopy()
		// Another writer changes the Machine after the copy the reconcile works from was read.
		m.Annotations["someone"] = "else"
		Expect(k8s.Update(ctx, m)).To(Succeed())
		staleReader := &staleMachines{Client: k8s, stale: stale}
		r.Client = staleReader

		res, err := r.Reconcile(ctx, requestFor(m))
		Expect(err).NotTo(HaveOccurred(), "a conflict is expected, not an error")
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "retried soon")
		Expect(gone(m)()).To(BeFalse())

		staleReader.stale = nil
		expect.Reconciled(ctx, r, m)
		Expect(gone(m)()).To(BeTrue())
	})

	It("records the MachineClass the instance was created from, and names the class and the path once it is edited", func() {
		class := builder.MachineClass(ns, "workers", "small")
		Expect(k8s.Create(ctx, class)).To(Succeed())
		m, _ := running(builder.Machine(ns, "classy").WithMachineClass("workers"))
		rec := expect.Fetched(ctx, k8s, m).Status.MachineClass
		Expect(rec).NotTo(BeNil())
		Expect(rec.Name).To(Equal("workers"))
		Expect(rec.Fields).To(ContainElement(HaveField("Path", "spec.providerSpec.instanceType")))
		Expect(conditionOf(m, v1beta1.UpToDateCondition).Reason).To(Equal(uptodate.ReasonUpToDate))

		expect.Fetched(ctx, k8s, class).Spec.ProviderSpec.Raw = []byte(`{"instanceType":"large"}`)
		Expect(k8s.Update(ctx, class)).To(Succeed())
		expect.Reconciled(ctx, r, m)
		c := conditionOf(m, v1beta1.UpToDateCondition)
		Expect(c.Status).To(Equal(metav1.ConditionFalse))
		Expect(c.Reason).To(Equal(uptodate.ReasonMachineClassChanged))
		Expect(c.Message).To(Equal("MachineClass workers changed since the instance was created: spec.providerSpec.instanceType"))
		Expect(expect.Fetched(ctx, k8s, m).Status.MachineClass).To(Equal(rec), "the record keeps the class as it was")
		Expect(cloud.Instances()).To(HaveLen(1), "a class edit replaces nothing by itself")
	})

	It("turns UpToDate False when the instance gets older than its deployment's machineMaxAgeSeconds, and asks to come back then", func() {
		md := builder.MachineDeployment(ns, "aging", 1).WithRollout(v1beta1.MachineDeploymentRollout{MachineMaxAgeSeconds: ptrTo[int32](3600)}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		set := builder.MachineSet(ns, "aging-abc", 1).Build()
		set.Spec.Template = md.Spec.Template
		set.Spec.Selector = md.Spec.Selector
		set.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(md, v1beta1.GroupVersion.WithKind("MachineDeployment"))}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		b := builder.Machine(ns, "aging-abc-1").WithLabels(md.Spec.Template.Metadata.Labels)
		m := b.Build()
		m.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet"))}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		for range 2 { // the finalizer; then Provisioning, stored, and Create
			expect.Reconciled(ctx, r, m)
		}
		provisioned := clock.Now()
		Expect(expect.Fetched(ctx, k8s, m).Status.ProvisionedTime.Time).To(BeTemporally("==", provisioned))

		clock.Step(30 * time.Minute)
		res := expect.Reconciled(ctx, r, m)
		Expect(conditionOf(m, v1beta1.UpToDateCondition).Message).To(Equal("matches the template of MachineDeployment aging"))
		Expect(res.RequeueAfter).To(BeNumerically("~", 30*time.Minute, time.Second), "no event says when the Machine gets too old")

		clock.Step(30 * time.Minute)
		expect.Reconciled(ctx, r, m)
		c := conditionOf(m, v1beta1.UpToDateCondition)
		Expect(c.Reason).To(Equal(uptodate.ReasonMaxAgeExceeded))
		Expect(c.Message).To(Equal("instance is 1h0m0s old, older than spec.rollout.machineMaxAgeSeconds (3600) of MachineDeployment aging"))
		Expect(c.LastTransitionTime.Time).To(BeTemporally("==", provisioned.Add(time.Hour)))
	})
})
