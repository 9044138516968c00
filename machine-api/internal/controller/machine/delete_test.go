package machine_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/provider/sim"
)

var _ = Describe("Deleting a Machine", func() {
	var (
		ns    string
		st    *stack.Stack
		clock *testclock.FakeClock
	)
	BeforeEach(func() {
		ns = newNamespace()
		clock = testclock.NewFakeClock(time.Now())
		var err error
		st, err = stack.Start(env.Config, stack.Options{Clock: clock})
		Expect(err).NotTo(HaveOccurred())
	})
	AfterEach(func() { Expect(st.Stop()).To(Succeed()) })

	// running creates a Machine and waits until it runs, returning its key and Node.
	running := func(b *builder.MachineBuilder) (types.NamespacedName, *corev1.Node) {
		m := b.Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))
		return key, nodeOf(key)
	}
	deleteMachine := func(key types.NamespacedName) {
		Expect(k8s.Delete(ctx, getMachine(key)())).To(Succeed())
	}
	machineGone := func(key types.NamespacedName) func() bool {
		return func() bool { return getMachine(key)() == nil }
	}
	nodeGone := func(n *corev1.Node) func() bool { return gone(n) }
	// unschedulable reads whether the Node is cordoned; a failed read fails the assertion rather
	// than passing for "not cordoned".
	unschedulable := func(n *corev1.Node) func() (bool, error) {
		return func() (bool, error) {
			cur := &corev1.Node{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(n), cur)
			return cur.Spec.Unschedulable, err
		}
	}
	instances := func() int { return len(instancesIn(st, ns)) }

	It("drains the Node, waits on a PodDisruptionBudget and names it, then deletes instance, Node and Machine", func() {
		key, node := running(builder.Machine(ns, "drain-me"))
		pod := runPod(ns, "web-0", node.Name, map[string]string{"app": "web"})
		pdb := blockingPDB(ns, "web", map[string]string{"app": "web"}, 1)
		deleteMachine(key)

		Eventually(condition(key, v1beta1.DeletingCondition)).Should(And(
			HavePrefix("True/DrainingNode"),
			ContainSubstring("pod "+ns+"/web-0 blocked by PodDisruptionBudget "+ns+"/web")))
		Expect(condition(key, v1beta1.DrainedCondition)()).To(HavePrefix("False/Draining"))
		Expect(getMachine(key)().Status.Phase).To(Equal(v1beta1.MachinePhaseDeleting))
		Eventually(unschedulable(node)).Should(BeTrue(), "the Node is cordoned")
		Consistently(instances, "2s").Should(Equal(1), "the instance stays while the drain is blocked")

		relaxPDB(pdb, 0)
		Eventually(gone(pod)).Should(BeTrue(), "the pod is evicted and the simulated kubelet finishes it")
		Eventually(machineGone(key)).Should(BeTrue())
		Expect(nodeGone(node)()).To(BeTrue())
		Expect(instances()).To(Equal(0))
	})

	It("applies a MachineDrainRule made while the drain is blocked: the pod it skips stays, and the Machine goes", func() {
		key, node := running(builder.Machine(ns, "late-rule"))
		pod := runPod(ns, "db-0", node.Name, map[string]string{"app": "db"})
		blockingPDB(ns, "db", map[string]string{"app": "db"}, 1)
		deleteMachine(key)
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(ContainSubstring("pod " + ns + "/db-0 blocked by PodDisruptionBudget " + ns + "/db"))

		Expect(k8s.Create(ctx, builder.DrainRule(ns, "keep-db").Behavior(v1beta1.DrainBehaviorSkip).Pods(map[string]string{"app": "db"}).Build())).To(Succeed())
		Eventually(machineGone(key)).Should(BeTrue())
		Expect(gone(pod)()).To(BeFalse(), "the pod the rule skips was never evicted")
		Expect(instances()).To(Equal(0))
	})

	It("waits for pre-drain hooks before draining and pre-terminate hooks before deleting the instance", func() {
		key, node := running(builder.Machine(ns, "hooked").
			WithPreDrainHook("backup", "backup-operator").
			WithPreTerminateHook("detach", "storage-operator"))
		deleteMachine(key)
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(Equal(
			"True/WaitingForPreDrainHooks: waiting for pre-drain hooks to be removed by their owners: backup (owner backup-operator)"))
		Consistently(unschedulable(node), "1s").Should(BeFalse(), "nothing is drained while a pre-drain hook remains")

		err := updateMachine(key, func(m *v1beta1.Machine) {
			m.Spec.LifecycleHooks.PreTerminate = append(m.Spec.LifecycleHooks.PreTerminate, v1beta1.LifecycleHook{Name: "late", Owner: "someone"})
		})
		Expect(err).To(HaveOccurred(), "hooks cannot be added once deletion started")
		Expect(err.Error()).To(ContainSubstring("spec.lifecycleHooks.preTerminate: a hook cannot be added to a Machine that is being deleted"))

		Expect(updateMachine(key, func(m *v1beta1.Machine) { m.Spec.LifecycleHooks.PreDrain = nil })).
			To(Succeed(), "removing a hook is how its owner lets deletion go on")
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(HavePrefix("True/WaitingForPreTerminateHooks"))
		Expect(condition(key, v1beta1.DrainedCondition)()).To(HavePrefix("True/Drained"))
		Expect(instances()).To(Equal(1), "the instance is kept while a pre-terminate hook remains")

		Expect(updateMachine(key, func(m *v1beta1.Machine) { m.Spec.LifecycleHooks.PreTerminate = nil })).To(Succeed())
		Eventually(machineGone(key)).Should(BeTrue())
		Expect(instances()).To(Equal(0))
	})

	It("skips the drain when the machine has the exclude-node-draining annotation", func() {
		key, node := running(builder.Machine(ns, "excluded").WithAnnotations(map[string]string{v1beta1.ExcludeNodeDrainingAnnotation: ""}))
		pod := runPod(ns, "stays", node.Name, map[string]string{"app": "stays"})
		blockingPDB(ns, "stays", map[string]string{"app": "stays"}, 1)
		deleteMachine(key)
		Eventually(machineGone(key)).Should(BeTrue())
		Expect(gone(pod)()).To(BeFalse(), "the pod was never evicted")
	})

	It("gives up draining after nodeDrainTimeoutSeconds and goes on", func() {
		key, node := running(builder.Machine(ns, "drain-timeout").WithDeletion(v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptrTo[int32](600)}))
		runPod(ns, "blocked", node.Name, map[string]string{"app": "blocked"})
		blockingPDB(ns, "blocked", map[string]string{"app": "blocked"}, 1)
		deleteMachine(key)
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(HavePrefix("True/DrainingNode"))
		Expect(getMachine(key)().Status.Deletion.NodeDrainStartTime).NotTo(BeNil(), "the start is recorded, so the timeout survives restarts")

		clock.Step(11 * time.Minute)
		Eventually(machineGone(key)).Should(BeTrue())
		Expect(instances()).To(Equal(0))
	})

	It("waits for volumes to detach, at most nodeVolumeDetachTimeoutSeconds", func() {
		key, node := running(builder.Machine(ns, "volumes").WithDeletion(v1beta1.MachineDeletionSpec{NodeVolumeDetachTimeoutSeconds: ptrTo[int32](60)}))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		node.Status.VolumesAttached = []corev1.AttachedVolume{{Name: "kubernetes.io/csi/disk-1", DevicePath: "/dev/sdb"}}
		Expect(k8s.Status().Update(ctx, node)).To(Succeed())
		deleteMachine(key)
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(Equal(
			"True/WaitingForVolumeDetach: waiting for 1 volume(s) to detach from Node " + node.Name + ": kubernetes.io/csi/disk-1"))
		Expect(instances()).To(Equal(1))

		clock.Step(2 * time.Minute)
		Eventually(machineGone(key)).Should(BeTrue())
	})

	It("drains an unreachable Node through the fast path instead of waiting for pods that never terminate", func() {
		key, node := running(builder.Machine(ns, "unreachable"))
		runPod(ns, "stuck", node.Name, map[string]string{"app": "stuck"})
		Expect(updateMachine(key, func(m *v1beta1.Machine) { m.Annotations = map[string]string{sim.UnreachableAnnotation: ""} })).To(Succeed())
		Eventually(condition(key, v1beta1.ReadyCondition)).Should(ContainSubstring("Ready=Unknown"))

		deleteMachine(key)
		Eventually(condition(key, v1beta1.DeletingCondition)).Should(HavePrefix("True/DrainingNode"))
		// The drain module gives up on pods terminating for more than a few seconds on an
		// unreachable Node; its clock is the controllers' clock.
		Eventually(func() bool {
			clock.Step(10 * time.Second)
			return machineGone(key)()
		}).Should(BeTrue())
	})
})
