package vms_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/vms"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"
	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// Bounds on what a user waits for. Under TCG a VM boots to a Ready Node in one to three minutes on
// a 2-core host, slower under load; the bounds are generous so that a loaded host is not a failure.
const (
	joinTimeout     = 12 * time.Minute // Machine created → Node Ready
	drainTimeout    = 10 * time.Minute // scale-down → Machine gone
	notReadyTimeout = 4 * time.Minute  // VM destroyed → Node not Ready (node-monitor-grace-period 50 s)
	inPlaceTimeout  = 12 * time.Minute // template changed → the Machine updated in place (drain, restart, boot, Ready)
	podsTimeout     = 8 * time.Minute  // Nodes Ready → the workload's pods Ready
	idleWindow      = 30 * time.Second // how long an idle VM's QEMU is measured
	healthTimeout   = 20               // seconds a Node may be not Ready before the health check acts
)

var _ = Describe("A MachineDeployment of libvirt VMs", Ordered, func() {
	var (
		md    *v1beta1.MachineDeployment
		big   *v1beta1.MachineClass // the class the in-place spec resizes the VM to
		nodes []string              // every Node of the deployment's Machines so far
		uids  []types.UID           // every Machine of the deployment so far
	)

	BeforeAll(func() {
		class := vms.MachineClass(ns, "loopback", vms.LoopbackSpec(*libvirtURI, *poolName, *imageVolume))
		Expect(k8s.Create(ctx, class)).To(Succeed())
		DeferCleanup(deleteAndWait, class, time.Minute)
		bigSpec := vms.LoopbackSpec(*libvirtURI, *poolName, *imageVolume)
		bigSpec["memory"], bigSpec["vcpus"] = "2Gi", 2
		big = vms.MachineClass(ns, "loopback-big", bigSpec)
		Expect(k8s.Create(ctx, big)).To(Succeed())
		DeferCleanup(deleteAndWait, big, time.Minute)
		md = vms.MachineDeployment(ns, "workers", class.Name, 0)
		Expect(k8s.Create(ctx, md)).To(Succeed())
		DeferCleanup(deleteAndWait, md, drainTimeout)
		// The workload waits, pending, from before the first VM boots: its pods are bound as soon
		// as a Node takes them, which is what the labels-before-pods check needs.
		web, budget := vms.Workload(ns), vms.Budget(ns)
		// Pods on a Node that went away are no longer Ready; the budget lets them go (the
		// policy Kubernetes recommends), so a drain of a dead Node is not held for them.
		budget.Spec.UnhealthyPodEvictionPolicy = ptr.To(policyv1.AlwaysAllow)
		Expect(k8s.Create(ctx, web)).To(Succeed())
		Expect(k8s.Create(ctx, budget)).To(Succeed())
		DeferCleanup(deleteAndWait, budget, time.Minute)
		DeferCleanup(deleteAndWait, web, time.Minute)
	})

	It("scaled 0 → 2 gets two Ready Nodes, linked by providerID, with the VMs' own InternalIPs, carrying the Machines' labels and taints before any pod", func() {
		scale(md, 2)
		machines := waitJoined(md, 2, nil)
		for _, m := range machines {
			node := getNode(m.Status.NodeRef.Name)
			nodes, uids = append(nodes, node.Name), append(uids, m.UID)
			By("Node " + node.Name + " of Machine " + m.Name)
			Expect(m.Spec.ProviderID).To(HavePrefix("libvirt:///"))
			Expect(node.Spec.ProviderID).To(Equal(m.Spec.ProviderID), "the Node's providerID is the Machine's")
			Expect(condition(&m, v1beta1.NodeLinkedCondition)).To(HavePrefix("True/"))
			ip := fmt.Sprintf("10.0.%d.15", providerStatus(&m).UserNetworkIndex)
			Expect(internalIP(m.Status.Addresses)).To(Equal(ip), "the Machine's InternalIP is its VM's address on its own user network")
			Expect(internalIP(node.Status.Addresses)).To(Equal(ip), "the Node's InternalIP is the VM's own")
			Expect(vms.Lacks(node.Labels, node.Spec.Taints, vms.NodeLabels(), vms.NodeTaints())).To(BeEmpty(), "the Machine's labels and taints on the Node")
			Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", v1beta1.NodeUninitializedTaintKey)), "the initialization taint is gone")
			versions := recorder.NodeVersions(node.Name)
			Expect(versions).NotTo(BeEmpty())
			Expect(versions[0].Taints).To(ContainElement(And(HaveField("Key", v1beta1.NodeUninitializedTaintKey), HaveField("Effect", corev1.TaintEffectNoSchedule))),
				"the Node registered with the initialization taint")
			Expect(versions[0].Labels).NotTo(HaveKey(vms.RoleLabel), "the kubelet gave itself no node-role label")
			reportJoin(&m, node)
		}

		By("the workload's pods run on the VMs, none bound before its Node carried the Machine's labels and taints")
		Eventually(workloadPods).WithTimeout(podsTimeout).Should(And(HaveLen(2), HaveEach(And(beReady(), beOnOneOf(nodes)))))
		Expect(bindingsOn(nodes)).To(BeNumerically(">=", 2), "pods were bound to the VM Nodes: the check below would prove nothing otherwise")
		Expect(recorder.BoundEarly(nodes, vms.NodeLabels(), vms.NodeTaints())).To(BeEmpty())

		By(fmt.Sprintf("measuring the host CPU of each idle VM's QEMU process over %s", idleWindow))
		measureIdle(machines)
	})

	It("scaled to 1 drains the Node that goes, with real pod termination and the budget honoured, before its VM stops", func() {
		Eventually(func(g Gomega) {
			var pdb policyv1.PodDisruptionBudget
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: vms.AppValue}, &pdb)).To(Succeed())
			g.Expect(pdb.Status.CurrentHealthy).To(BeEquivalentTo(2))
			g.Expect(pdb.Status.DisruptionsAllowed).To(BeEquivalentTo(1))
		}).Should(Succeed(), "the disruption controller sees both pods healthy")
		machines := machinesOf(md)
		Expect(machines).To(HaveLen(2))
		pods := workloadPods()
		onNode := func(m v1beta1.Machine) []string {
			var out []string
			for _, p := range pods {
				if p.Spec.NodeName == m.Status.NodeRef.Name {
					out = append(out, p.Name)
				}
			}
			return out
		}
		victim, survivor := machines[0], machines[1]
		if len(onNode(survivor)) > len(onNode(victim)) {
			victim, survivor = survivor, victim
		}
		victimPods := onNode(victim)
		victimNode := victim.Status.NodeRef.Name
		Expect(victimPods).NotTo(BeEmpty())
		GinkgoWriter.Printf("deleting Machine %s (Node %s, pods %v); Machine %s stays\n", victim.Name, victimNode, victimPods, survivor.Name)

		patch := client.MergeFrom(victim.DeepCopy())
		if victim.Annotations == nil {
			victim.Annotations = map[string]string{}
		}
		victim.Annotations[v1beta1.DeleteMachineAnnotation] = "yes"
		Expect(k8s.Patch(ctx, &victim, patch)).To(Succeed())
		since := time.Now()
		stop := watchStop(victim.UID, victimNode)
		scale(md, 1)
		Eventually(gone(&victim)).WithTimeout(drainTimeout).Should(BeTrue(), "Machine %s deleted", victim.Name)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&survivor), &v1beta1.Machine{})).To(Succeed(), "the other Machine stays")

		stoppedAt, podsLeft := stop()
		Expect(stoppedAt).NotTo(BeZero(), "the suite saw the VM stop")
		Expect(podsLeft).To(BeEmpty(), "pods still on Node %s when its VM stopped", victimNode)
		lives := recorder.Pods()
		for _, name := range victimPods {
			l := lives[name]
			Expect(l.Terminating).NotTo(BeZero(), "pod %s went Terminating", name)
			Expect(l.Exited).NotTo(BeZero(), "the kubelet stopped pod %s's container", name)
			Expect(l.Deleted).NotTo(BeZero(), "pod %s is gone", name)
			Expect(l.Deleted).To(BeTemporally("<", stoppedAt), "pod %s was gone before its VM stopped", name)
			GinkgoWriter.Printf("pod %s: Terminating → container stopped %s → gone %s; VM stopped %s after\n", name,
				l.Exited.Sub(l.Terminating).Round(100*time.Millisecond), l.Deleted.Sub(l.Exited).Round(100*time.Millisecond), stoppedAt.Sub(l.Deleted).Round(100*time.Millisecond))
		}
		least, changes := recorder.LeastReady(since)
		Expect(changes).To(BeNumerically(">", 0))
		Expect(least).To(BeNumerically(">=", 1), "Ready pods never fewer than the budget's minAvailable")

		By("the pods are rescheduled on the Node that stays")
		Eventually(workloadPods).WithTimeout(podsTimeout).Should(And(HaveLen(2), HaveEach(And(beReady(), beOnOneOf([]string{survivor.Status.NodeRef.Name})))))
		Expect(recorder.BoundEarly(nodes, vms.NodeLabels(), vms.NodeTaints())).To(BeEmpty())
		expectNothingLeftOf(victim.UID, victimNode)
	})

	It("replaces a VM destroyed behind the provider's back: its Node goes NotReady, the health check has it replaced, the new VM joins", func() {
		mhc := vms.HealthCheck(ns, healthTimeout)
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		DeferCleanup(deleteAndWait, mhc, time.Minute)
		machines := machinesOf(md)
		Expect(machines).To(HaveLen(1))
		victim := machines[0]
		victimNode := victim.Status.NodeRef.Name
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mhc), mhc)).To(Succeed())
			g.Expect(mhc.Status.ExpectedMachines).To(BeEquivalentTo(1))
			g.Expect(mhc.Status.CurrentHealthy).To(BeEquivalentTo(1))
		}).Should(Succeed(), "the health check sees the Machine healthy")

		By("destroying domain of Machine " + victim.Name + " with libvirt, as a host failure would")
		destroyed := time.Now()
		Expect(host.Destroy(victim.UID)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(nodeReady(getNode(victimNode))).NotTo(Equal(corev1.ConditionTrue))
		}).WithTimeout(notReadyTimeout).Should(Succeed(), "Node %s goes NotReady", victimNode)
		notReady := time.Since(destroyed).Round(time.Second)
		GinkgoWriter.Printf("Node %s not Ready %s after its VM was destroyed\n", victimNode, notReady)
		AddReportEntry("VM destroyed → Node not Ready", notReady.String())

		Eventually(gone(&victim)).WithTimeout(drainTimeout).Should(BeTrue(), "the remediated Machine %s is deleted", victim.Name)
		replacements := waitJoined(md, 1, func(m v1beta1.Machine) bool { return m.UID != victim.UID })
		node := getNode(replacements[0].Status.NodeRef.Name)
		nodes, uids = append(nodes, node.Name), append(uids, replacements[0].UID)
		Expect(node.Spec.ProviderID).To(Equal(replacements[0].Spec.ProviderID))
		Expect(vms.Lacks(node.Labels, node.Spec.Taints, vms.NodeLabels(), vms.NodeTaints())).To(BeEmpty())
		reportJoin(&replacements[0], node)
		expectNothingLeftOf(victim.UID, victimNode)

		By("the workload comes back on the new Node")
		Eventually(workloadPods).WithTimeout(podsTimeout).Should(And(HaveLen(2), HaveEach(And(beReady(), beOnOneOf([]string{node.Name})))))
		Expect(recorder.BoundEarly(nodes, vms.NodeLabels(), vms.NodeTaints())).To(BeEmpty())
	})

	It("resized in place under rollout.inPlace Prefer keeps its Machine and Node: drained, its VM restarted once with more memory and vCPUs, Ready again with the new capacity, uncordoned, no new MachineSet", func() {
		machines := machinesOf(md)
		Expect(machines).To(HaveLen(1))
		m := machines[0]
		nodeName := m.Status.NodeRef.Name
		before := getNode(nodeName)
		Expect(before.Status.Capacity.Cpu().Value()).To(BeEquivalentTo(1), "the VM starts with 1 vCPU")
		setsBefore := setsOf(md)
		Expect(setsBefore).To(HaveLen(1))
		dom, found, err := host.DomainOf(m.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found && dom.Running).To(BeTrue())
		Expect([]any{dom.MemoryMiB, dom.VCPUs}).To(Equal([]any{int64(1024), int32(1)}), "domain %s's size before", dom.Name)

		By("removing the budget: both pods run on this one Node, and minAvailable 1 would hold its drain for good")
		deleteAndWait(vms.Budget(ns), time.Minute)

		By(fmt.Sprintf("giving the template MachineClass %s (2 GiB, 2 vCPUs) with spec.rollout.inPlace Prefer", big.Name))
		stop := watchStop(m.UID, nodeName)
		since := time.Now()
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Rollout = &v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}
		md.Spec.Template.Spec.ProviderSpec.MachineClass = &v1beta1.MachineClassReference{Name: big.Name}
		Expect(k8s.Patch(ctx, md, patch)).To(Succeed())

		updated := &v1beta1.Machine{}
		last := ""
		Eventually(func(g Gomega) {
			g.Expect(manager.Exited()).To(Succeed())
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&m), updated)).To(Succeed())
			line := condition(updated, v1beta1.UpdatingCondition) + " node " + string(nodeReady(getNode(nodeName)))
			if line != last {
				last = line
				GinkgoWriter.Printf("%s Updating=%s\n", time.Now().Format(time.TimeOnly), line)
			}
			g.Expect(updated.Status.InPlaceUpdate).To(BeNil())
			g.Expect(condition(updated, v1beta1.UpdatingCondition)).To(HavePrefix("False/InPlaceUpdated: "))
		}).WithTimeout(inPlaceTimeout).WithPolling(5*time.Second).Should(Succeed(), "Machine %s updated in place", m.Name)
		took := time.Since(since).Round(time.Second)

		stoppedAt, podsLeft := stop()
		Expect(stoppedAt).NotTo(BeZero(), "the suite saw the VM stop for its restart")
		Expect(podsLeft).To(BeEmpty(), "pods still on Node %s when its VM stopped: the drain comes first", nodeName)
		Expect(machinesOf(md)).To(ConsistOf(And(HaveField("UID", m.UID), HaveField("Status.NodeRef.Name", nodeName))), "the same Machine, with the same Node")
		Expect(setsOf(md)).To(Equal(setsBefore), "no new MachineSet")

		node := getNode(nodeName)
		Expect(nodeReady(node)).To(Equal(corev1.ConditionTrue))
		Expect(node.Spec.Unschedulable).To(BeFalse(), "uncordoned")
		Expect(node.Status.Capacity.Cpu().Value()).To(BeEquivalentTo(2), "the Node's CPU capacity")
		// A guest's memory capacity is its MemTotal: the domain's memory less what the kernel keeps.
		Expect(node.Status.Capacity.Memory().Cmp(resource.MustParse("1792Mi"))).To(Equal(1), "the Node's memory capacity %s is that of 2 GiB (it was %s)",
			node.Status.Capacity.Memory(), before.Status.Capacity.Memory())
		dom, found, err = host.DomainOf(m.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found && dom.Running).To(BeTrue())
		Expect([]any{dom.MemoryMiB, dom.VCPUs}).To(Equal([]any{int64(2048), int32(2)}), "domain %s runs with the new size", dom.Name)

		Eventually(func(g Gomega) { // the suite's watch may lag the read above by a moment
			cordons, uncordoned, boots := 0, false, map[string]bool{}
			wasCordoned := before.Spec.Unschedulable
			for _, v := range recorder.NodeVersions(nodeName) {
				if v.Seen.Before(since) {
					continue
				}
				if v.Unschedulable && !wasCordoned {
					cordons++
				}
				uncordoned, wasCordoned = cordons > 0 && !v.Unschedulable, v.Unschedulable
				if v.BootID != "" {
					boots[v.BootID] = true
				}
			}
			g.Expect(cordons).To(Equal(1), "Node %s cordoned once", nodeName)
			g.Expect(uncordoned).To(BeTrue(), "Node %s uncordoned after it", nodeName)
			g.Expect(boots).To(HaveLen(2), "the Node's boot IDs since the change: the old one and one new one, a single restart")
			g.Expect(boots).To(HaveKey(before.Status.NodeInfo.BootID))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("the workload's pods, evicted by the drain, run on the Node again")
		Eventually(workloadPods).WithTimeout(podsTimeout).Should(And(HaveLen(2), HaveEach(And(beReady(), beOnOneOf([]string{nodeName})))))
		line := fmt.Sprintf("Machine %s (Node %s): template changed → InPlaceUpdated %s (%s; VM stopped %s after the change; host load %s)",
			m.Name, nodeName, took, condition(updated, v1beta1.UpdatingCondition), stoppedAt.Sub(since).Round(time.Second), vms.LoadAverage())
		GinkgoWriter.Println(line)
		AddReportEntry("in-place resize", line)
	})

	It("scaled to 0 leaves no domain, no volume but the image, no Node and no bootstrap token", func() {
		deleteAndWait(vms.Budget(ns), time.Minute)
		deleteAndWait(vms.Workload(ns), time.Minute)
		Eventually(workloadPods).Should(BeEmpty())
		scale(md, 0)
		Eventually(func() []v1beta1.Machine { return machinesOf(md) }).WithTimeout(drainTimeout).Should(BeEmpty())
		Eventually(func(g Gomega) {
			var nodeList corev1.NodeList
			g.Expect(k8s.List(ctx, &nodeList)).To(Succeed())
			g.Expect(nodeList.Items).To(BeEmpty(), "Nodes")
			doms, err := host.Domains(managerID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(doms).To(BeEmpty(), "domains")
			for _, uid := range monitor.MachineUIDs() {
				g.Expect(host.VolumesOf(uid)).To(BeEmpty(), "volumes of Machine %s", uid)
			}
			g.Expect(bootstrapTokens()).To(BeEmpty(), "bootstrap tokens")
		}).Should(Succeed())
		Expect(host.HasVolume(*imageVolume)).To(BeTrue(), "the image volume stays")
		Expect(monitor.MachineUIDs()).To(ContainElements(uids), "the volumes checked above were those of every Machine of the deployment")
	})
})

// setsOf names the deployment's MachineSets (those it owns), sorted.
func setsOf(md *v1beta1.MachineDeployment) []string {
	GinkgoHelper()
	var list v1beta1.MachineSetList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, set := range list.Items {
		if slices.ContainsFunc(set.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == md.UID }) {
			out = append(out, set.Name)
		}
	}
	slices.Sort(out)
	return out
}

// scale sets a MachineDeployment's replicas.
func scale(md *v1beta1.MachineDeployment, replicas int32) {
	GinkgoHelper()
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = ptr.To(replicas)
	Expect(k8s.Patch(ctx, md, patch)).To(Succeed())
	GinkgoWriter.Printf("%s MachineDeployment %s scaled to %d\n", time.Now().Format(time.TimeOnly), md.Name, replicas)
}

// machinesOf lists the deployment's Machines.
func machinesOf(md *v1beta1.MachineDeployment) []v1beta1.Machine {
	GinkgoHelper()
	var list v1beta1.MachineList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1beta1.DeploymentNameLabel: md.Name})).To(Succeed())
	return list.Items
}

// waitJoined waits until the deployment has n Machines (those accepted by match, when given), each
// Running with a Ready Node linked to it, and returns them. It prints the Machines as they change.
func waitJoined(md *v1beta1.MachineDeployment, n int, match func(v1beta1.Machine) bool) []v1beta1.Machine {
	GinkgoHelper()
	var joined []v1beta1.Machine
	last := ""
	Eventually(func(g Gomega) {
		var lines []string
		joined = nil
		for _, m := range machinesOf(md) {
			if match != nil && !match(m) {
				continue
			}
			line := describe(&m)
			if m.Status.NodeRef != nil {
				line += " nodeReady=" + string(nodeReady(getNode(m.Status.NodeRef.Name)))
				if nodeReady(getNode(m.Status.NodeRef.Name)) == corev1.ConditionTrue && condition(&m, v1beta1.NodeLinkedCondition) != "" {
					joined = append(joined, m)
				}
			}
			lines = append(lines, line)
		}
		if s := fmt.Sprint(lines); s != last {
			last = s
			GinkgoWriter.Printf("%s %v\n", time.Now().Format(time.TimeOnly), lines)
		}
		g.Expect(manager.Exited()).To(Succeed())
		g.Expect(joined).To(HaveLen(n))
	}).WithTimeout(joinTimeout).WithPolling(5*time.Second).Should(Succeed(), "%d Machine(s) of %s with Ready Nodes", n, md.Name)
	return joined
}

// getNode returns the Node, or an empty one when it does not exist.
func getNode(name string) *corev1.Node {
	GinkgoHelper()
	node := &corev1.Node{}
	if err := k8s.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading Node %s: %v", name, err)
		return &corev1.Node{}
	}
	return node
}

func nodeReady(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func internalIP(addrs []corev1.NodeAddress) string {
	for _, a := range addrs {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func providerStatus(m *v1beta1.Machine) api.ProviderStatus {
	GinkgoHelper()
	var st api.ProviderStatus
	Expect(m.Status.ProviderStatus).NotTo(BeNil())
	Expect(json.Unmarshal(m.Status.ProviderStatus.Raw, &st)).To(Succeed())
	return st
}

// reportJoin prints and reports how long the Machine's VM took from its start (the Machine's
// InstanceProvisioned condition, set when Create returned) to a Ready Node.
func reportJoin(m *v1beta1.Machine, node *corev1.Node) {
	var started, ready time.Time
	for _, c := range m.Status.Conditions {
		if c.Type == v1beta1.InstanceProvisionedCondition && c.Status == "True" {
			started = c.LastTransitionTime.Time
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.LastTransitionTime.Time
		}
	}
	line := fmt.Sprintf("Machine %s (Node %s): VM started → Node registered %s → Ready %s (Machine created → Ready %s; host load %s)",
		m.Name, node.Name, node.CreationTimestamp.Sub(started), ready.Sub(started), ready.Sub(m.CreationTimestamp.Time), vms.LoadAverage())
	GinkgoWriter.Println(line)
	AddReportEntry("boot → Ready", line)
}

// measureIdle measures the host CPU each Machine's QEMU process uses over idleWindow, and
// reports it as a share of one core.
func measureIdle(machines []v1beta1.Machine) {
	GinkgoHelper()
	type sample struct {
		name string
		pid  int
		cpu  time.Duration
	}
	var samples []sample
	for _, m := range machines {
		name := providerStatus(&m).DomainName
		pid, err := vms.QEMUPid(name)
		Expect(err).NotTo(HaveOccurred())
		cpu, err := vms.CPUTime(pid)
		Expect(err).NotTo(HaveOccurred())
		samples = append(samples, sample{name, pid, cpu})
	}
	start := time.Now()
	time.Sleep(idleWindow) //nolint:forbidigo // a measurement window, not a wait for something to happen
	elapsed := time.Since(start)
	for _, s := range samples {
		cpu, err := vms.CPUTime(s.pid)
		Expect(err).NotTo(HaveOccurred())
		line := fmt.Sprintf("domain %s: QEMU (pid %d) used %.0f%% of a core while idle (%s over %s; host load %s)",
			s.name, s.pid, 100*float64(cpu-s.cpu)/float64(elapsed), cpu-s.cpu, elapsed.Round(time.Second), vms.LoadAverage())
		GinkgoWriter.Println(line)
		AddReportEntry("idle VM CPU", line)
	}
}

// watchStop samples the Machine's domain every half second until it stops, goes, or runs with
// another id than at the start (it was stopped and started again between two samples), and then
// records which pods the suite still saw bound to node. The returned function waits for that and
// returns when the VM stopped and those pods.
func watchStop(uid types.UID, node string) func() (time.Time, []string) {
	var (
		wg      sync.WaitGroup
		stopped time.Time
		left    []string
	)
	first, _, err := host.DomainOf(uid)
	Expect(err).NotTo(HaveOccurred())
	wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(max(drainTimeout, inPlaceTimeout))
		for {
			d, found, err := host.DomainOf(uid)
			if err == nil && (!found || !d.Running || d.ID != first.ID) {
				stopped = time.Now()
				for _, l := range recorder.Pods() {
					if l.Node == node && l.Deleted.IsZero() {
						left = append(left, l.Name)
					}
				}
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() (time.Time, []string) {
		wg.Wait()
		return stopped, left
	}
}

// expectNothingLeftOf checks that a deleted Machine left no domain, volume, bootstrap token or Node.
func expectNothingLeftOf(uid types.UID, node string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		_, found, err := host.DomainOf(uid)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeFalse(), "domain of Machine %s", uid)
		g.Expect(host.VolumesOf(uid)).To(BeEmpty(), "volumes of Machine %s", uid)
		var secrets corev1.SecretList
		g.Expect(k8s.List(ctx, &secrets, client.InNamespace("kube-system"), client.MatchingLabels{bootstrap.MachineUIDLabel: string(uid)})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "bootstrap tokens of Machine %s", uid)
		g.Expect(getNode(node).Name).To(BeEmpty(), "Node %s", node)
	}).Should(Succeed())
}

// workloadPods lists the workload's pods, terminating ones included.
func workloadPods() []corev1.Pod {
	GinkgoHelper()
	var list corev1.PodList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{vms.AppLabel: vms.AppValue})).To(Succeed())
	return list.Items
}

func beReady() OmegaMatcher {
	return WithTransform(func(p corev1.Pod) bool {
		if p.DeletionTimestamp != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}, BeTrue())
}

func beOnOneOf(nodes []string) OmegaMatcher {
	return WithTransform(func(p corev1.Pod) string { return p.Spec.NodeName }, BeElementOf(nodes))
}

// bindingsOn counts the pod bindings the suite saw to these Nodes.
func bindingsOn(nodes []string) int {
	n := 0
	for _, b := range recorder.Bindings() {
		if slices.Contains(nodes, b.Node) {
			n++
		}
	}
	return n
}

// gone reports whether obj no longer exists.
func gone(obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err)
	}
}

// deleteAndWait deletes obj and waits until it is gone.
func deleteAndWait(obj client.Object, timeout time.Duration) {
	GinkgoHelper()
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
	Eventually(gone(obj)).WithTimeout(timeout).Should(BeTrue(), "%T %s deleted", obj, obj.GetName())
}
