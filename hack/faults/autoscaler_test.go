package faults_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	gtypes "github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var clusterAutoscaler = flag.String("cluster-autoscaler", "", "the cluster-autoscaler binary (clusterapi provider) the autoscaler scenarios run (default <bin-dir>/cluster-autoscaler)")

// Keys of the cluster-autoscaler the scenarios use.
const (
	// safeToEvict on a pod without a controller lets the autoscaler move it (and so remove its Node).
	safeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// toBeDeleted is the taint the autoscaler puts on a Node it removes.
	toBeDeleted = "ToBeDeletedByClusterAutoscaler"
	// holdFinalizer keeps a pod terminating after its eviction until the scenario removes it: the
	// autoscaler's drain of its Node waits for it, which holds the autoscaler between choosing a
	// Node and lowering the replicas.
	holdFinalizer = "faults.machineapi.dev/hold"
)

// The real cluster-autoscaler (make test-autoscaler): the unmodified 1.36 binary, clusterapi
// provider, CAPI_GROUP=machine.machineapi.dev, driving MachineDeployments of the real
// machine-manager on the local control plane, whose kube-scheduler marks pending pods
// unschedulable. Every scenario runs its own autoscaler, which discovers node groups in the
// scenario's namespace only, and ends with the fault matrix's invariants (Scenario.Verify) and a
// check that no manager logged an expected optimistic-lock conflict as an error. Each step's time
// is reported (AddReportEntry) and summed up at the end of the suite.
var _ = Describe("The cluster-autoscaler", Label("autoscaler"), func() {
	var (
		s     *Scenario
		as    *faults.Autoscaler
		steps *stepTimer
	)
	BeforeEach(func() {
		bin := *clusterAutoscaler
		if bin == "" {
			bin = filepath.Join(*binDir, "cluster-autoscaler")
		}
		if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
			Fail(fmt.Sprintf("no cluster-autoscaler binary at %s: run `make test-autoscaler` (it unpacks the provided one), "+
				"or pass -cluster-autoscaler=<path>", bin))
		}
		s = NewScenario("autoscaler")
		s.Start(s.MachineManager())
		as = &faults.Autoscaler{Binary: bin, Kubeconfig: plane.Kubeconfig, Namespace: s.NS, LogFile: filepath.Join(s.Dir, "logs", "cluster-autoscaler.log")}
		steps = newStepTimer()
	})
	AfterEach(func() {
		crashed := as.Exited()
		as.Stop(10 * time.Second)
		Expect(crashed).NotTo(HaveOccurred())
		Expect(conflictErrors(s)).To(BeEmpty(), "an expected optimistic-lock conflict is retried without an error log")
		s.Verify()
	})

	// startAutoscaler starts the autoscaler and waits until it reports node group name (or, with
	// name "", until it has written its status once).
	startAutoscaler := func(name string, minSize, maxSize int) {
		GinkgoHelper()
		Expect(as.Start(ctx, k8s)).To(Succeed())
		logf("cluster-autoscaler started, log %s", as.LogFile)
		Eventually(func(g Gomega) {
			g.Expect(as.Exited()).To(Succeed())
			st, err := faults.ReadAutoscalerStatus(ctx, k8s)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st).NotTo(BeNil(), "the autoscaler has written its status")
			if name == "" {
				return
			}
			ng := st.Group(name)
			g.Expect(ng).NotTo(BeNil(), "node group %s discovered", name)
			g.Expect([]int{ng.Health.MinSize, ng.Health.MaxSize}).To(Equal([]int{minSize, maxSize}), "its bounds")
		}).WithTimeout(time.Minute).Should(Succeed())
	}

	It("discovers a MachineDeployment, scales it up for pending pods and removes exactly the Machines it chose", func() {
		md := autoscaled(faults.MachineDeployment(s.NS, "pool", 1), 1, 4)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		s.WaitRunning("pool", 1, time.Minute)
		steps.done("a MachineDeployment of 1 Running Machine")

		startAutoscaler(group(md), 1, 4)
		steps.done("discovery of MachineDeployment/" + s.NS + "/pool (min 1, max 4)")

		By("three pods of 1.5 CPU each need three 2-CPU Nodes")
		web := workload(s.NS, "web", 3, "1500m")
		Expect(k8s.Create(ctx, web)).To(Succeed())
		Eventually(runningPods(s.NS, "web")).WithTimeout(3 * time.Minute).Should(HaveLen(3))
		Expect(replicasOf(md)).To(Equal(int32(3)))
		machines := s.RunningMachines("pool")
		Expect(machines).To(HaveLen(3))
		for _, m := range machines {
			node := &corev1.Node{}
			Expect(k8s.Get(ctx, types.NamespacedName{Name: m.Status.NodeRef.Name}, node)).To(Succeed())
			Expect(node.Spec.ProviderID).To(Equal(m.Spec.ProviderID), "Machine %s is linked to its own Node", m.Name)
		}
		Eventually(groupCounts(md)).Should(Equal("registered=3 ready=3 unregistered=0 longUnregistered=0"),
			"every Node the autoscaler asked for registered")
		steps.done("scale-up 1 -> 3 for pending pods, Nodes linked and registered")

		By("two pods go: the autoscaler removes two empty Nodes, and exactly their Machines go")
		Scale(web, 1)
		Eventually(func() []string { return liveMachines(s.NS) }).WithTimeout(3 * time.Minute).Should(HaveLen(1))
		Expect(replicasOf(md)).To(Equal(int32(1)))
		chosen := chosenMachines(as, s.NS)
		deleted, marked := deletedAndMarked(s.NS)
		Expect(chosen).To(HaveLen(2), "the autoscaler removed two Nodes")
		Expect(deleted).To(Equal(chosen), "the Machines deleted are those of the Nodes the autoscaler chose")
		Expect(marked).To(Equal(chosen), "and carry its delete-machine mark")
		Expect(runningPods(s.NS, "web")()).To(HaveLen(1), "the remaining pod keeps running")
		steps.done("scale-down 3 -> 1 of the two Machines it chose")
	})

	It("scales down under a disruption budget of 1: the set deletes the Machines it chose one at a time, holding the next, and the autoscaler waits", func() {
		md := autoscaled(faults.MachineDeployment(s.NS, "pool", 1), 1, 4)
		md.Spec.Disruption = &v1beta1.Disruption{Budgets: []v1beta1.DisruptionBudget{{Name: "one-at-a-time", Nodes: intstr.FromInt32(1)}}}
		// A pre-drain hook the test removes keeps each deleted Machine deleting until the test
		// says, so the second removal finds the budget used up whenever the autoscaler asks.
		md.Spec.Template.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: "test-hold", Owner: "faults"}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		s.WaitRunning("pool", 1, time.Minute)
		startAutoscaler(group(md), 1, 4)

		web := workload(s.NS, "web", 3, "1500m")
		Expect(k8s.Create(ctx, web)).To(Succeed())
		Eventually(runningPods(s.NS, "web")).WithTimeout(3 * time.Minute).Should(HaveLen(3))
		steps.done("scale-up 1 -> 3 for pending pods")

		By("two pods go: the autoscaler removes two Nodes; one Machine is deleted, the other held")
		Scale(web, 1)
		Eventually(func() int32 { return replicasOf(md) }).WithTimeout(3*time.Minute).Should(Equal(int32(1)), "the autoscaler lowered replicas by two")
		var first v1beta1.Machine
		Eventually(func(g Gomega) {
			deleting, held := deletingAndHeld(g, s.NS)
			g.Expect(deleting).To(HaveLen(1))
			g.Expect(held).To(HaveLen(1))
			first = deleting[0]
		}).WithTimeout(3 * time.Minute).Should(Succeed())
		Consistently(func(g Gomega) {
			deleting, held := deletingAndHeld(g, s.NS)
			g.Expect(deleting).To(HaveLen(1), "one Machine deleted at a time")
			g.Expect(held).To(HaveLen(1), "the other held")
		}).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(replicasOf(md)).To(Equal(int32(1)), "the autoscaler does not scale back up for the held Machine")
		steps.done("the second removal held by the budget for 20 s")

		By("the first Machine released: the held one goes next, then it is released too")
		patchOut := func(m v1beta1.Machine) {
			GinkgoHelper()
			Expect(k8s.Patch(ctx, &m, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"lifecycleHooks":{"preDrain":null}}}`)))).To(Succeed())
		}
		patchOut(first)
		var second v1beta1.Machine
		Eventually(func(g Gomega) {
			deleting, held := deletingAndHeld(g, s.NS)
			g.Expect(held).To(BeEmpty())
			g.Expect(deleting).To(HaveLen(1))
			g.Expect(deleting[0].Name).NotTo(Equal(first.Name))
			second = deleting[0]
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		patchOut(second)
		Eventually(func() []string { return liveMachines(s.NS) }).WithTimeout(2 * time.Minute).Should(HaveLen(1))
		// The hook off the template, and so off the Machine left, for the suite's clean-up.
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{"spec":{"lifecycleHooks":{"preDrain":null}}}}}`)))).To(Succeed())
		chosen := chosenMachines(as, s.NS)
		deleted, _ := deletedAndMarked(s.NS)
		Expect(deleted).To(Equal(chosen), "the Machines deleted are those of the Nodes the autoscaler chose")
		Expect(runningPods(s.NS, "web")()).To(HaveLen(1), "the remaining pod keeps running")
		steps.done("both removals done, one after the other")
	})

	It("removes the Machine it chose, and no other, from a rollout paused half-way, and skips the group while it rolls out", func() {
		// maxSurge 1, maxUnavailable 0; the oldest Machine is deleted last by the rollout (Newest
		// first), and minReadySeconds leaves time to pause the rollout at old 3, new 4. The new set
		// is then larger than the old one, so spreading a decrease in proportion would take one of
		// its Machines; and it stays below the 5 replicas left after the decrease, so it is not
		// saturated (a saturated new set ends a rollout, paused or not, as in apps/v1).
		md := autoscaled(faults.MachineDeployment(s.NS, "roll", 1), 5, 6)
		surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
		md.Spec.Strategy = v1beta1.MachineDeploymentStrategy{Type: v1beta1.RollingUpdateStrategy, RollingUpdate: &v1beta1.MachineRollingUpdateDeployment{
			MaxSurge: &surge, MaxUnavailable: &unavailable, DeletePolicy: v1beta1.NewestDeletePolicy,
		}}
		md.Spec.MinReadySeconds = ptr.To[int32](5)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		chosen := s.WaitRunning("roll", 1, time.Minute)[0]
		// The others must be newer to the second (creationTimestamp's resolution).
		Eventually(func() bool { return time.Now().After(chosen.CreationTimestamp.Add(time.Second)) }).Should(BeTrue())
		Scale(md, 6)
		running := s.WaitRunning("roll", 6, 2*time.Minute)
		var others []v1beta1.Machine
		for _, m := range running {
			if m.Name != chosen.Name {
				others = append(others, m)
			}
		}
		// Pods without a controller keep the autoscaler from removing the other Nodes; the chosen
		// Machine's Node has only a small pod it may move, held terminating by a finalizer.
		s.PlaceProbes(others, nil)
		held := faults.ProbePod(s.NS, chosen.Status.NodeRef.Name, 1, nil)
		held.Annotations = map[string]string{safeToEvict: "true"}
		held.Finalizers = []string{holdFinalizer}
		held.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		Expect(k8s.Create(ctx, held)).To(Succeed())
		DeferCleanup(func() {
			_ = k8s.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		})
		Eventually(podPhase(held)).Should(Equal(corev1.PodRunning))
		steps.done("a MachineDeployment of 6, one Node removable")

		startAutoscaler(group(md), 5, 6)
		Eventually(func() bool { return tainted(chosen.Status.NodeRef.Name) && terminating(held) }).WithTimeout(2*time.Minute).
			Should(BeTrue(), "the autoscaler chose the Node of %s and drains it", chosen.Name)
		steps.done("the autoscaler chose " + chosen.Name + " and drains its Node")

		By("a rollout starts while the drain waits, and is paused at old 3, new 4")
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"medium"}}}}}}`)))).To(Succeed())
		Eventually(setsByRevision(s.NS)).WithTimeout(3 * time.Minute).Should(Equal(map[string]int32{"1": 3, "2": 4}))
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`)))).To(Succeed())
		pausedAt := time.Now()
		Consistently(setsByRevision(s.NS), "3s").Should(Equal(map[string]int32{"1": 3, "2": 4}), "paused half-way")
		steps.done("rollout paused half-way (old set 3, new set 4)")

		underRollout := regexp.MustCompile(`Node \S+ will be skipped as it is currently under rollout`)
		Eventually(func() int { return len(loggedSince(as, underRollout, pausedAt)) }).WithTimeout(time.Minute).
			Should(BeNumerically(">", 0), "the autoscaler sees the group is rolling out")
		steps.done("the autoscaler logs the group as under rollout")

		By("the drain ends: the autoscaler marks the chosen Machine and lowers the replicas 6 -> 5")
		before := liveMachines(s.NS)
		released := time.Now()
		Expect(k8s.Patch(ctx, held, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
		Eventually(Gone(&chosen)).WithTimeout(2*time.Minute).Should(BeTrue(), "the chosen Machine is deleted")
		Expect(replicasOf(md)).To(Equal(int32(5)))
		want := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == chosen.Name })
		Consistently(func() []string { return liveMachines(s.NS) }, "10s").Should(Equal(want), "no other Machine goes")
		Expect(deletedSince(s.NS, released)).To(Equal([]string{chosen.Name}))
		Expect(setsByRevision(s.NS)()).To(Equal(map[string]int32{"1": 2, "2": 4}), "the chosen Machine's (old) set shrank")
		steps.done("scale-down 6 -> 5 removed exactly " + chosen.Name)

		By("the rollout resumes and completes; the autoscaler stops skipping the group")
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`)))).To(Succeed())
		Eventually(setsByRevision(s.NS)).WithTimeout(3 * time.Minute).Should(Equal(map[string]int32{"1": 0, "2": 5}))
		Eventually(func() []string { return liveMachines(s.NS) }).WithTimeout(2 * time.Minute).Should(HaveLen(5))
		// The old set is empty once its status says so; from the next loop on, nothing is skipped.
		Eventually(func() int32 { return oldSetStatusReplicas(s.NS) }).Should(BeZero())
		settled := time.Now().Add(2 * faults.AutoscalerScanInterval)
		Eventually(func() bool { return time.Now().After(settled) }).WithTimeout(time.Minute).Should(BeTrue())
		Consistently(func() int { return len(loggedSince(as, underRollout, settled)) }, 3*faults.AutoscalerScanInterval).
			Should(BeZero(), "no Node is skipped for a rollout once it completed")
		steps.done("rollout completed, the group no longer skipped")
	})

	It("neither scales nor reconciles a MachineDeployment paused with cluster.x-k8s.io/paused, until it is unpaused", func() {
		md := autoscaled(faults.MachineDeployment(s.NS, "held", 1), 1, 3)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		s.WaitRunning("held", 1, time.Minute)
		Annotate(md, map[string]*string{v1beta1.ClusterAPIPausedAnnotation: ptr.To("")})
		startAutoscaler("", 0, 0)
		steps.done("a MachineDeployment of 1, paused")

		By("pods wait for Nodes and the replicas are raised by hand: nothing happens while paused")
		Expect(k8s.Create(ctx, workload(s.NS, "web", 3, "1500m"))).To(Succeed())
		Scale(md, 2)
		generation := getMD(md).Generation
		observed := getMD(md).Status.ObservedGeneration
		Consistently(func(g Gomega) {
			got := getMD(md)
			g.Expect(ptr.Deref(got.Spec.Replicas, 1)).To(Equal(int32(2)), "the autoscaler leaves the replicas alone")
			g.Expect(got.Generation).To(Equal(generation))
			g.Expect(got.Status.ObservedGeneration).To(Equal(observed), "the MachineDeployment controller leaves it alone")
			g.Expect(liveMachines(s.NS)).To(HaveLen(1), "no Machine is created")
			st, err := faults.ReadAutoscalerStatus(ctx, k8s)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Group(group(md))).To(BeNil(), "a paused MachineDeployment is no node group")
		}, 4*faults.AutoscalerScanInterval, time.Second).Should(Succeed())
		Expect(runningPods(s.NS, "web")()).To(HaveLen(1), "two pods still wait")
		steps.done("paused for 4 autoscaler loops: not scaled, not reconciled")

		By("unpaused: we reconcile the 2 replicas, and the autoscaler adds the third Node")
		Annotate(md, map[string]*string{v1beta1.ClusterAPIPausedAnnotation: nil})
		Eventually(runningPods(s.NS, "web")).WithTimeout(3 * time.Minute).Should(HaveLen(3))
		Expect(replicasOf(md)).To(Equal(int32(3)))
		steps.done("unpaused: reconciled to 2, scaled up to 3")
	})

	It("scales a MachineDeployment from 0 to 1 for a pod only its MachineClass's nodeTemplate fits, and back to 0", func() {
		class := &v1beta1.MachineClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: "big"},
			Spec: v1beta1.MachineClassSpec{
				ProviderSpec: runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)},
				NodeTemplate: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
				}},
			},
		}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		md := autoscaled(faults.MachineDeployment(s.NS, "zero", 0), 0, 2)
		md.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "big"}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(func() map[string]string { return getMD(md).Annotations }).Should(And(
			HaveKeyWithValue(v1beta1.CapacityCPUAnnotation, "16"), HaveKeyWithValue(v1beta1.CapacityMemoryAnnotation, "64Gi")))
		steps.done("capacity annotations written from the MachineClass's nodeTemplate")

		startAutoscaler(group(md), 0, 2)
		steps.done("discovery of a MachineDeployment of 0 (min 0, max 2)")

		By("a pod of 12 CPU")
		pod := bigPod(s.NS, "twelve", "12")
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		Eventually(podPhase(pod)).WithTimeout(3 * time.Minute).Should(Equal(corev1.PodRunning))
		Expect(replicasOf(md)).To(Equal(int32(1)))
		machines := s.RunningMachines("zero")
		Expect(machines).To(HaveLen(1))
		node := &corev1.Node{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: machines[0].Status.NodeRef.Name}, node)).To(Succeed())
		Expect(node.Status.Capacity.Cpu().String()).To(Equal("16"), "the Node has the nodeTemplate's capacity")
		steps.done("scale-up 0 -> 1 for a 12-CPU pod")

		By("the pod goes: back to 0")
		Expect(k8s.Delete(ctx, pod)).To(Succeed())
		Eventually(func() []string { return liveMachines(s.NS) }).WithTimeout(3 * time.Minute).Should(BeEmpty())
		Expect(replicasOf(md)).To(BeZero())
		steps.done("scale-down 1 -> 0 once the pod is gone")
	})
})

// autoscaled gives a MachineDeployment the autoscaler's node-group bounds.
func autoscaled(md *v1beta1.MachineDeployment, minSize, maxSize int) *v1beta1.MachineDeployment {
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[v1beta1.AutoscalerMinSizeAnnotation] = fmt.Sprint(minSize)
	md.Annotations[v1beta1.AutoscalerMaxSizeAnnotation] = fmt.Sprint(maxSize)
	return md
}

// group is the autoscaler's name of a MachineDeployment's node group.
func group(md *v1beta1.MachineDeployment) string {
	return "MachineDeployment/" + md.Namespace + "/" + md.Name
}

func getMD(md *v1beta1.MachineDeployment) *v1beta1.MachineDeployment {
	GinkgoHelper()
	got := &v1beta1.MachineDeployment{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(md), got)).To(Succeed())
	return got
}

func replicasOf(md *v1beta1.MachineDeployment) int32 {
	GinkgoHelper()
	return ptr.Deref(getMD(md).Spec.Replicas, 1)
}

// groupCounts describes the Node counts the autoscaler reports for md's node group.
func groupCounts(md *v1beta1.MachineDeployment) func() string {
	return func() string {
		st, err := faults.ReadAutoscalerStatus(ctx, k8s)
		if err != nil || st.Group(group(md)) == nil {
			return fmt.Sprintf("no status (%v)", err)
		}
		c := st.Group(group(md)).Health.NodeCounts
		return fmt.Sprintf("registered=%d ready=%d unregistered=%d longUnregistered=%d", c.Registered.Total, c.Registered.Ready, c.Unregistered, c.LongUnregistered)
	}
}

// workload is an apps/v1 Deployment of replicas pods requesting cpu each.
func workload(ns, name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
				},
			},
		},
	}
}

// bigPod is a pod without a controller requesting cpu, for the scheduler to place.
func bigPod(ns, name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
}

// runningPods returns the names of the Running pods labelled app=<app>.
func runningPods(ns, app string) func() []string {
	return func() []string {
		pods := &corev1.PodList{}
		Expect(k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
		var out []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, p.Name)
			}
		}
		return out
	}
}

func podPhase(p *corev1.Pod) func() corev1.PodPhase {
	return func() corev1.PodPhase {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return ""
		}
		return got.Status.Phase
	}
}

func terminating(p *corev1.Pod) bool {
	got := &corev1.Pod{}
	return k8s.Get(ctx, client.ObjectKeyFromObject(p), got) == nil && got.DeletionTimestamp != nil
}

// tainted reports whether the autoscaler has tainted the Node for removal.
func tainted(node string) bool {
	n := &corev1.Node{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == toBeDeleted {
			return true
		}
	}
	return false
}

// deletingAndHeld returns the Machines of ns being deleted and those a disruption budget holds.
func deletingAndHeld(g Gomega, ns string) (deleting, held []v1beta1.Machine) {
	list := &v1beta1.MachineList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for _, m := range list.Items {
		c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.DeletingCondition)
		switch {
		case m.DeletionTimestamp != nil:
			deleting = append(deleting, m)
		case c != nil && c.Status == metav1.ConditionFalse && c.Reason == "WaitingForDisruptionBudget":
			held = append(held, m)
		}
	}
	return deleting, held
}

// liveMachines returns the names of the Machines of ns that are not being deleted, sorted.
func liveMachines(ns string) []string {
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, m := range list.Items {
		if m.DeletionTimestamp == nil {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// setsByRevision returns spec.replicas of the MachineSets of ns by their revision.
func setsByRevision(ns string) func() map[string]int32 {
	return func() map[string]int32 {
		list := &v1beta1.MachineSetList{}
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		out := map[string]int32{}
		for _, s := range list.Items {
			out[s.Annotations[v1beta1.RevisionAnnotation]] = ptr.Deref(s.Spec.Replicas, 1)
		}
		return out
	}
}

// oldSetStatusReplicas is status.replicas of the revision-1 set of ns.
func oldSetStatusReplicas(ns string) int32 {
	list := &v1beta1.MachineSetList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for _, s := range list.Items {
		if s.Annotations[v1beta1.RevisionAnnotation] == "1" {
			return s.Status.Replicas
		}
	}
	return 0
}

// chosenMachines returns the Machines of ns whose Nodes the autoscaler logged it removes, sorted.
func chosenMachines(as *faults.Autoscaler, ns string) []string {
	byNode := map[string]string{}
	for _, r := range tracker.Machines(ns) {
		for _, n := range r.Nodes {
			byNode[n] = r.Name
		}
	}
	removing := regexp.MustCompile(`Scale-down: removing (?:empty )?node "?([^" ]+)"?`)
	seen := map[string]bool{}
	var out []string
	for _, line := range as.LogLines(removing) {
		node := removing.FindStringSubmatch(line)[1]
		if m := byNode[node]; m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// deletedAndMarked returns the Machines of ns that were deleted, and those that ever carried the
// delete-machine mark, sorted.
func deletedAndMarked(ns string) (deleted, marked []string) {
	for _, r := range tracker.Machines(ns) {
		if !r.Deleting.IsZero() {
			deleted = append(deleted, r.Name)
		}
		if r.Annotations[v1beta1.DeleteMachineAnnotation] {
			marked = append(marked, r.Name)
		}
	}
	sort.Strings(deleted)
	sort.Strings(marked)
	return deleted, marked
}

// deletedSince returns the Machines of ns whose deletion the suite's watch saw after t, sorted.
func deletedSince(ns string, t time.Time) []string {
	var out []string
	for _, r := range tracker.Machines(ns) {
		if r.Deleting.After(t) {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

// klogTime reads the time of a klog line ("I1202 02:53:16.169137 ..."), in this year, UTC.
var klogTime = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})`)

// loggedSince returns the autoscaler's log lines matching re logged after t.
func loggedSince(as *faults.Autoscaler, re *regexp.Regexp, t time.Time) []string {
	var out []string
	for _, line := range as.LogLines(re) {
		m := klogTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", m[1], time.Local)
		if err != nil {
			continue
		}
		at = at.AddDate(t.Year(), 0, 0)
		if at.After(t) {
			out = append(out, line)
		}
	}
	return out
}

// conflictErrors returns the error lines of the scenario's managers that report an
// optimistic-lock conflict: those are expected, and retried without an error log.
func conflictErrors(s *Scenario) []string {
	var out []string
	for _, c := range s.Managers {
		for _, f := range c.LogFiles() {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, `"level":"error"`) && strings.Contains(line, "the object has been modified") {
					out = append(out, fmt.Sprintf("%s: %.300s", filepath.Base(f), line))
				}
			}
		}
	}
	return out
}

// stepTimer records how long each step of a scenario took (a report entry per step, summed up
// by the suite's ReportAfterSuite).
type stepTimer struct{ last time.Time }

func newStepTimer() *stepTimer { return &stepTimer{last: time.Now()} }

// done records the time since the previous step (or the scenario's start) for step.
func (t *stepTimer) done(step string) {
	d := time.Since(t.last).Round(100 * time.Millisecond)
	t.last = time.Now()
	AddReportEntry(stepEntry+step, d.String())
	logf("step done in %s: %s", d, step)
}

const stepEntry = "step: "

// The autoscaler scenarios' step times, at the end of the suite.
var _ = ReportAfterSuite("autoscaler step times", func(r Report) {
	var b strings.Builder
	var total time.Duration
	for _, spec := range r.SpecReports {
		if !slices.Contains(spec.Labels(), "autoscaler") || spec.State.Is(gtypes.SpecStateSkipped|gtypes.SpecStatePending) {
			continue
		}
		fmt.Fprintf(&b, "%s (%s, %s)\n", spec.LeafNodeText, spec.State, spec.RunTime.Round(time.Second))
		for _, e := range spec.ReportEntries {
			if name, ok := strings.CutPrefix(e.Name, stepEntry); ok {
				fmt.Fprintf(&b, "  %8s  %s\n", e.Value.String(), name)
			}
		}
		total += spec.RunTime
	}
	if b.Len() > 0 {
		fmt.Fprintf(os.Stderr, "\ncluster-autoscaler scenarios, step times (each spec's time includes its set-up and invariant checks):\n%sscenarios total: %s\n",
			b.String(), total.Round(time.Second))
	}
})
