package remotedrain_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/controller/remotedrain"
	"machineapi.dev/cluster-api/internal/test/builder"
)

// testFinalizer stands in for the machine controller's finalizer: a deleted Machine stays,
// deleting, until the spec lets it go.
const testFinalizer = "test.machineapi.dev/hold"

var _ = Describe("Machines whose Nodes live in a workload cluster", func() {
	var (
		ns      string // in both API servers
		cluster *v1beta1.Cluster
	)

	BeforeEach(func() {
		ns = newNamespace(k8s)
		Expect(wl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"},
			Data:       map[string][]byte{"value": workload.KubeConfig},
		}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		cluster = builder.Cluster(ns, "c").WithKubeconfig(secret.Name).Build()
		cluster.Finalizers = []string{testFinalizer} // no cluster controller runs here
		Expect(k8s.Create(ctx, cluster)).To(Succeed())
		DeferCleanup(func() {
			list := &machinev1.MachineList{}
			Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			for i := range list.Items {
				Expect(client.IgnoreNotFound(removeFinalizer(&list.Items[i]))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(removeFinalizer(cluster))).To(Succeed())
		})
	})

	// remoteMachine creates a Machine of the Cluster, linked (status.nodeRef) to a new Ready Node
	// of the workload cluster when node is not empty.
	remoteMachine := func(name, node string, edit ...func(*machinev1.Machine)) *machinev1.Machine {
		GinkgoHelper()
		m := builder.Machine(ns, name).InCluster("c").Remote().WithProviderID("remote:///" + name).Build()
		m.Finalizers = []string{testFinalizer}
		for _, e := range edit {
			e(m)
		}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		if node != "" {
			Expect(wl.Create(ctx, builder.Node(node, m.Spec.ProviderID))).To(Succeed())
			before := m.DeepCopy()
			m.Status.NodeRef = &machinev1.NodeReference{Kind: "Node", Name: node}
			Expect(k8s.Status().Patch(ctx, m, client.MergeFrom(before))).To(Succeed()) // as the node linker does
		}
		Eventually(hooks(m)).Should(ContainElement(drainHook), "the remote Machine is held")
		return m
	}

	It("holds a remote Machine with the preDrain hook, and leaves other hooks and other Machines alone", func() {
		other := builder.Machine(ns, "local").InCluster("c").Build()
		Expect(k8s.Create(ctx, other)).To(Succeed())
		m := remoteMachine("held", "", func(m *machinev1.Machine) {
			m.Spec.LifecycleHooks.PreDrain = []machinev1.LifecycleHook{{Name: "backup", Owner: "someone"}}
		})
		Expect(hooks(m)()).To(ConsistOf(drainHook, machinev1.LifecycleHook{Name: "backup", Owner: "someone"}))
		Consistently(hooks(other), 2*time.Second).Should(BeEmpty(), "a Machine whose Node is in the management cluster is not held")
	})

	It("drains the Node in the workload cluster, honouring a PodDisruptionBudget there, and then lets the Machine go", func() {
		m := remoteMachine("drained", "node-drained-"+ns)
		node := m.Status.NodeRef.Name
		createPod(ns, "api-0", node, nil)
		createPod(ns, "web-0", node, map[string]string{"app": "web"})
		pdb := createPDB(ns, "web", 1, 0)

		Expect(k8s.Delete(ctx, m)).To(Succeed())
		By("cordoning the Node and evicting the pod no budget protects")
		Eventually(func(g Gomega) bool {
			n := &corev1.Node{}
			g.Expect(wl.Get(ctx, types.NamespacedName{Name: node}, n)).To(Succeed())
			return n.Spec.Unschedulable
		}).Should(BeTrue())
		Eventually(terminating(ns, "api-0")).Should(BeTrue(), "api-0 was evicted")
		Expect(terminating(ns, "web-0")()).To(BeFalse())

		By("holding deletion while the budget allows no disruption, and saying so")
		Eventually(condition(m)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", remotedrain.ReasonDraining),
			HaveField("Message", ContainSubstring("blocked by PodDisruptionBudget "+ns+"/web (allows 0 disruptions)")),
			HaveField("Message", ContainSubstring(machinev1.ExcludeNodeDrainingAnnotation)),
		))
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("blocked by PodDisruptionBudget")))
		finishTerminatingPods(ns) // the kubelet stopped api-0
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("1 pod remaining; pod " + ns + "/web-0 blocked by PodDisruptionBudget")))
		events := len(eventsFor(m)(Default))
		Consistently(hooks(m), 3*remotedrainPoll).Should(ContainElement(drainHook), "the budget still blocks web-0")
		Expect(eventsFor(m)(Default)).To(HaveLen(events), "an event per change of the drain's state, not per poll")

		By("letting the Machine go once the budget allows the eviction and the pod is gone")
		relaxed := time.Now()
		relaxPDB(pdb, 0)
		Eventually(terminating(ns, "web-0")).Should(BeTrue(), "web-0 was evicted")
		finishTerminatingPods(ns)
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		GinkgoWriter.Printf("hook removed %s after the budget allowed the last eviction\n", time.Since(relaxed))
		Eventually(eventsFor(m)).Should(ContainElement(MatchRegexp(`Normal Drained: drained Node %s of the workload cluster \(.*\) in \d+s`, node)))
		Eventually(condition(m)).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("waits for the other preDrain hooks before it drains, and counts nodeDrainTimeoutSeconds from the start of draining", func() {
		m := remoteMachine("waits", "node-waits-"+ns, func(m *machinev1.Machine) {
			m.Spec.LifecycleHooks.PreDrain = []machinev1.LifecycleHook{{Name: "backup", Owner: "someone"}}
			m.Spec.Deletion = &machinev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](3)}
		})
		node := m.Status.NodeRef.Name
		createPod(ns, "api-0", node, nil)
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		By("neither cordoning nor evicting while another preDrain hook holds the drain, and saying so")
		Eventually(condition(m)).Should(And(
			HaveField("Status", metav1.ConditionUnknown),
			HaveField("Reason", remotedrain.ReasonWaitingForPreDrainHooks),
			HaveField("Message", ContainSubstring("backup (owner someone)")),
		))
		untouched := func(g Gomega) {
			n := &corev1.Node{}
			g.Expect(wl.Get(ctx, types.NamespacedName{Name: node}, n)).To(Succeed())
			g.Expect(n.Spec.Unschedulable).To(BeFalse(), "the Node is not cordoned")
			g.Expect(terminating(ns, "api-0")()).To(BeFalse(), "api-0 is not evicted")
			g.Expect(hooks(m)()).To(ContainElement(drainHook))
		}
		Consistently(untouched, 4*time.Second).Should(Succeed(), "held longer than nodeDrainTimeoutSeconds since the deletion")

		By("draining once the other hook is gone, although nodeDrainTimeoutSeconds has passed since the deletion")
		removeHook(m, "backup")
		Eventually(terminating(ns, "api-0")).Should(BeTrue(), "api-0 was evicted")
		Eventually(condition(m)).Should(HaveField("Status", metav1.ConditionFalse))

		By("giving up nodeDrainTimeoutSeconds after draining began, api-0 still terminating (no kubelet here)")
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		// The event recorder writes after the hook is removed, asynchronously.
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("Warning DrainTimeout")))
		Expect(eventsFor(m)(Default)).NotTo(ContainElement(ContainSubstring("Normal Drained")))
	})

	It("applies the MachineDrainRules of the Machine's namespace in the management cluster: the pods a Skip rule selects stay", func() {
		rule := &machinev1.MachineDrainRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep-db"},
			Spec: machinev1.MachineDrainRuleSpec{
				Drain: machinev1.MachineDrainRuleDrain{Behavior: machinev1.DrainBehaviorSkip},
				Pods:  []machinev1.MachineDrainRulePods{{Selector: machinev1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
			},
		}
		Expect(k8s.Create(ctx, rule)).To(Succeed())
		m := remoteMachine("ruled", "node-ruled-"+ns)
		createPod(ns, "db-0", m.Status.NodeRef.Name, map[string]string{"app": "db"})
		createPod(ns, "api-0", m.Status.NodeRef.Name, nil)
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		Eventually(terminating(ns, "api-0")).Should(BeTrue(), "api-0 was evicted")
		finishTerminatingPods(ns)
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("Normal Drained")))
		Expect(terminating(ns, "db-0")()).To(BeFalse(), "the pod the rule skips stays")
	})

	It("deletes a pod its budget blocks its grace period before drainDeadlineSeconds, and names it in an event", func() {
		m := remoteMachine("deadline", "node-deadline-"+ns, func(m *machinev1.Machine) {
			m.Spec.Deletion = &machinev1.MachineDeletionSpec{DrainDeadlineSeconds: ptr.To[int32](33)}
		})
		createPod(ns, "web-0", m.Status.NodeRef.Name, map[string]string{"app": "web"}) // grace period 30s, the API server's default
		createPDB(ns, "web", 1, 0)
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		Eventually(condition(m)).Should(HaveField("Message", MatchRegexp(`blocked by PodDisruptionBudget `+ns+`/web \(allows 0 disruptions\); deleted at \S+ unless gone before`)))
		Eventually(terminating(ns, "web-0")).Should(BeTrue(), "deleted 3s after draining began, 30s before the deadline")
		pod := &corev1.Pod{}
		Expect(wl.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, pod)).To(Succeed())
		Expect(pod.DeletionGracePeriodSeconds).To(Equal(ptr.To[int64](30)), "with its own grace period")
		Eventually(eventsFor(m)).Should(ContainElement(And(HavePrefix("Warning "+remotedrain.EventPodsDeleted),
			ContainSubstring(ns+"/web-0 (grace period 30s, over PodDisruptionBudget "+ns+"/web allowing 0 disruptions)"))))
		finishTerminatingPods(ns)
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
	})

	It("lets a Machine without a Node go at once", func() {
		m := remoteMachine("nodeless", "")
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		Eventually(eventsFor(m)).Should(ContainElement("Normal NoNode: draining skipped: the machine has no Node"))
	})

	It("lets a Machine whose Node no longer exists in the workload cluster go", func() {
		m := remoteMachine("nodegone", "node-gone-"+ns)
		Expect(wl.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Status.NodeRef.Name}})).To(Succeed())
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("Normal NodeNotFound")))
	})

	It("gives up after nodeDrainTimeoutSeconds, with a warning", func() {
		m := remoteMachine("timeout", "node-timeout-"+ns, func(m *machinev1.Machine) {
			m.Spec.Deletion = &machinev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](3)}
		})
		createPod(ns, "web-0", m.Status.NodeRef.Name, map[string]string{"app": "web"})
		createPDB(ns, "web", 1, 0)
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(condition(m)).Should(HaveField("Message", ContainSubstring("gives up at")))
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("Warning DrainTimeout")))
		Expect(terminating(ns, "web-0")()).To(BeFalse(), "the budget was honoured to the end")
	})

	It("lets the Machines go when their Cluster is being deleted, even mid-drain", func() {
		m := remoteMachine("clustergone", "node-clustergone-"+ns)
		createPod(ns, "web-0", m.Status.NodeRef.Name, map[string]string{"app": "web"})
		createPDB(ns, "web", 1, 0)
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(condition(m)).Should(HaveField("Reason", remotedrain.ReasonDraining))
		Consistently(hooks(m), 2*time.Second).Should(ContainElement(drainHook))

		Expect(k8s.Delete(ctx, cluster)).To(Succeed())
		Eventually(hooks(m)).ShouldNot(ContainElement(drainHook))
		Eventually(eventsFor(m)).Should(ContainElement(ContainSubstring("Normal ClusterDeleting")))
	})
})

// remotedrainPoll is the controller's poll while a drain waits.
const remotedrainPoll = 5 * time.Second

var drainHook = machinev1.LifecycleHook{Name: v1beta1.DrainHookName, Owner: v1beta1.DrainHookOwner}

func hooks(m *machinev1.Machine) func() []machinev1.LifecycleHook {
	return func() []machinev1.LifecycleHook {
		got := &machinev1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		return got.Spec.LifecycleHooks.PreDrain
	}
}

func condition(m *machinev1.Machine) func() *metav1.Condition {
	return func() *metav1.Condition {
		got := &machinev1.Machine{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
		return meta.FindStatusCondition(got.Status.Conditions, v1beta1.WorkloadNodeDrainedCondition)
	}
}

// eventsFor returns "Type Reason: note" of every event about m.
func eventsFor(m *machinev1.Machine) func(Gomega) []string {
	return func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(m.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Name == m.Name {
				out = append(out, e.Type+" "+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// removeHook removes the preDrain hook name from m, as its owner would.
func removeHook(m *machinev1.Machine, name string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &machinev1.Machine{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		got.Spec.LifecycleHooks.PreDrain = slices.DeleteFunc(got.Spec.LifecycleHooks.PreDrain, func(h machinev1.LifecycleHook) bool { return h.Name == name })
		return k8s.Update(ctx, got)
	})).To(Succeed())
}

func removeFinalizer(o client.Object) error {
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		return err
	}
	before := o.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(o, testFinalizer)
	return k8s.Patch(ctx, o, client.MergeFrom(before))
}

// createPod creates a running, ready pod of a ReplicaSet on node in the workload cluster, as the
// scheduler and the kubelet would leave it.
func createPod(ns, name, node string, labels map[string]string) {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs", UID: types.UID(name + "-rs"), Controller: ptr.To(true),
		}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	Expect(wl.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	Expect(wl.Status().Update(ctx, pod)).To(Succeed())
}

// createPDB creates a budget that needs minAvailable of the pods labelled app=<name> (minAvailable
// counts pods without looking up their controller's scale) and waits until kube-controller-manager's
// disruption controller, running against the workload API server, allows that many disruptions.
func createPDB(ns, name string, minAvailable, allowed int32) *policyv1.PodDisruptionBudget {
	GinkgoHelper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	Expect(wl.Create(ctx, pdb)).To(Succeed())
	Eventually(budgetAllows(pdb, allowed)).Should(Succeed())
	return pdb
}

// relaxPDB lowers the budget's minAvailable. It does not wait for the disruption controller's new
// status: the drain may use the disruption it allows at once (the Eviction API takes it from
// status.disruptionsAllowed), so the test watches the pods instead.
func relaxPDB(pdb *policyv1.PodDisruptionBudget, minAvailable int32) {
	GinkgoHelper()
	patch := fmt.Appendf(nil, `{"spec":{"minAvailable":%d}}`, minAvailable)
	Expect(wl.Patch(ctx, pdb, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func budgetAllows(pdb *policyv1.PodDisruptionBudget, allowed int32) func(Gomega) {
	return func(g Gomega) {
		got := &policyv1.PodDisruptionBudget{}
		g.Expect(wl.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.DisruptionsAllowed).To(Equal(allowed), "disruptions allowed by %s", pdb.Name)
	}
}

// terminating reports whether the pod was evicted (it has a deletion timestamp) or is gone.
func terminating(ns, name string) func() bool {
	return func() bool {
		pod := &corev1.Pod{}
		err := wl.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)
		if apierrors.IsNotFound(err) {
			return true
		}
		Expect(err).NotTo(HaveOccurred())
		return pod.DeletionTimestamp != nil
	}
}

// finishTerminatingPods does what the kubelet does once a terminating pod's containers stopped.
func finishTerminatingPods(ns string) {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(wl.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp != nil {
			err := wl.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
			Expect(client.IgnoreNotFound(err)).To(Succeed(), fmt.Sprintf("deleting pod %s", p.Name))
		}
	}
}
