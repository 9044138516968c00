package machinelink_test

import (
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/manager"
)

// bindings records, from a watch started now, the Node each pod of ns was first seen bound to:
// every placement the scheduler made, however briefly it lasted.
func bindings(ns string) func() map[string]string {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var (
		mu    sync.Mutex
		bound = map[string]string{}
	)
	go func() {
		for e := range w.ResultChan() {
			if p, ok := e.Object.(*corev1.Pod); ok && e.Type != watch.Error && p.Spec.NodeName != "" {
				mu.Lock()
				if _, seen := bound[p.Name]; !seen {
					bound[p.Name] = p.Spec.NodeName
				}
				mu.Unlock()
			}
		}
	}()
	return func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]string, len(bound))
		for k, v := range bound {
			out[k] = v
		}
		return out
	}
}

func pod(ns, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
		}}}},
	}
	mutate(p)
	return p
}

// holdLink on a Machine keeps the suite's node linker from linking it (see suite_test.go).
const holdLink = "test.machineapi.dev/hold-link"

var _ = Describe("A Node of a Machine", func() {
	const role = "node-role.kubernetes.io/db"
	dedicated := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}

	It("takes no pod until the Machine's labels and taints are on it: pods kept off the pool never land there, pods for the pool run", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gate-"}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		bound := bindings(ns.Name)

		// Waiting before the pool exists: pods that must stay off it (an affinity against its
		// role label; no toleration for its taint), and pods for it.
		offByAffinity := func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: role, Operator: corev1.NodeSelectorOpDoesNotExist}},
				}}},
			}}
			p.Spec.Tolerations = []corev1.Toleration{{Key: dedicated.Key, Operator: corev1.TolerationOpExists}}
		}
		offByTaint := func(*corev1.Pod) {}
		forPool := func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{role: ""}
			p.Spec.Tolerations = []corev1.Toleration{{Key: dedicated.Key, Operator: corev1.TolerationOpExists}}
		}
		var off []string
		for i := range 4 {
			for kind, mutate := range map[string]func(*corev1.Pod){"off-affinity": offByAffinity, "off-taint": offByTaint} {
				name := kind + "-" + string(rune('a'+i))
				Expect(k8s.Create(ctx, pod(ns.Name, name, mutate))).To(Succeed())
				off = append(off, name)
			}
		}
		Expect(k8s.Create(ctx, pod(ns.Name, "for-pool", forPool))).To(Succeed())

		By("a pool of 3 Machines whose Nodes register, as real kubelets do, and wait while nothing links them")
		set := builder.MachineSet(ns.Name, "db", 3).WithNodeLabels(map[string]string{role: ""}).WithTaints(dedicated).
			WithTemplateLabels(map[string]string{holdLink: ""}).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		var poolNodes []string
		Eventually(func() []string {
			machines := &v1beta1.MachineList{}
			Expect(k8s.List(ctx, machines, client.InNamespace(ns.Name))).To(Succeed())
			ids := map[string]bool{}
			for _, m := range machines.Items {
				if m.Spec.ProviderID != "" {
					ids[m.Spec.ProviderID] = true
				}
			}
			nodes := &corev1.NodeList{}
			Expect(k8s.List(ctx, nodes)).To(Succeed())
			poolNodes = nil
			for _, n := range nodes.Items {
				if ids[n.Spec.ProviderID] && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1beta1.NodeUninitializedTaintKey }) {
					poolNodes = append(poolNodes, n.Name)
				}
			}
			return poolNodes
		}).Should(HaveLen(3), "the pool's Nodes registered, gated")
		onPool := func() []string {
			var on []string
			for name, node := range bound() {
				if slices.Contains(poolNodes, node) {
					on = append(on, name+" on "+node)
				}
			}
			return on
		}
		// Other specs' Nodes (initialized, without the pool's label and taint) may take the pods
		// kept off the pool: that is where they belong.
		Consistently(onPool, "3s").Should(BeEmpty(), "a registered Node that is not initialized takes no pod, whatever the pod asks for")

		By("the linker gets to the Machines: their Nodes take their labels and taint, and only then pods")
		Eventually(func() error {
			cur := &v1beta1.MachineSet{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(set), cur); err != nil {
				return err
			}
			delete(cur.Spec.Template.Metadata.Labels, holdLink)
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() int32 {
			cur := &v1beta1.MachineSet{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(set), cur)).To(Succeed())
			return cur.Status.ReadyReplicas
		}).Should(BeEquivalentTo(3))

		By("the pod for the pool runs on one of its Nodes; the others stay pending, never bound there")
		Eventually(func() string { return bound()["for-pool"] }).Should(BeElementOf(poolNodes))
		Eventually(func() corev1.PodPhase {
			p := &corev1.Pod{}
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "for-pool"}, p)).To(Succeed())
			return p.Status.Phase
		}).Should(Equal(corev1.PodRunning))
		for _, n := range poolNodes {
			node := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: n}, node)).To(Succeed())
			Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", v1beta1.NodeUninitializedTaintKey)), "Node %s initialized", n)
		}
		Consistently(func() []string {
			var wrong []string
			for name, node := range bound() {
				if slices.Contains(off, name) && slices.Contains(poolNodes, node) {
					wrong = append(wrong, name+" on "+node)
				}
			}
			return wrong
		}, "3s").Should(BeEmpty(), "no pod kept off the pool was ever bound to one of its Nodes")
	})
})

var _ = Describe("A Machine's taints", func() {
	It("keep an Always taint in sync, and put an OnInitialization taint on once, leaving it to the Node's owner after", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "taints-"}}
		Expect(k8s.Create(ctx, ns)).To(Succeed())
		set := builder.MachineSet(ns.Name, "warm", 1).Build()
		set.Spec.Template.Spec.Taints = []v1beta1.MachineTaint{
			{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}, // Always, the default
			{Key: "warming-up", Effect: corev1.TaintEffectNoSchedule, Propagation: v1beta1.TaintPropagationOnInitialization},
		}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		var node string
		Eventually(func() string {
			list := &v1beta1.MachineList{}
			Expect(k8s.List(ctx, list, client.InNamespace(ns.Name))).To(Succeed())
			if len(list.Items) != 1 || list.Items[0].Status.NodeRef == nil {
				return ""
			}
			node = list.Items[0].Status.NodeRef.Name
			return node
		}).ShouldNot(BeEmpty())
		taintKeys := func() []string {
			n := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
			var keys []string
			for _, t := range n.Spec.Taints {
				keys = append(keys, t.Key)
			}
			return keys
		}
		Eventually(taintKeys).Should(ConsistOf("dedicated", "warming-up"), "both, in the patch that initializes the Node")
		Expect(taintKeys()).NotTo(ContainElement(v1beta1.NodeUninitializedTaintKey))

		By("the Node's owner removes both: the OnInitialization taint stays off, the Always one comes back")
		Eventually(func() error {
			n := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Spec.Taints = nil
			return k8s.Update(ctx, n)
		}).Should(Succeed())
		Eventually(taintKeys).Should(ConsistOf("dedicated"))
		Consistently(taintKeys, "2s").Should(ConsistOf("dedicated"))
	})
})
