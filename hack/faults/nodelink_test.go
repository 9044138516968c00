package faults_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

const (
	// linkerLabel marks the Machines the standalone nodelink links; machine-manager's in-process
	// linker leaves them alone (--node-link-selector).
	linkerLabel = "faults.machineapi.dev/linker"
	// dbRole is the role label the db pool's Machines give their Nodes.
	dbRole = "node-role.kubernetes.io/db"
	// gateHeld is how long the scenario watches the pool's gated Nodes while nodelink is down:
	// the scheduler retries pending pods within milliseconds of a Node change it could use.
	gateHeld = 20 * time.Second
)

// dedicatedDB is the taint the db pool's Machines put on their Nodes.
var dedicatedDB = corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}

// Scenario 10: a pool's Machines are linked by the standalone nodelink binary (machine-manager's
// own linker leaves them out), and nodelink is killed while the pool scales up. The pool's Nodes
// register with the initialization taint and nothing removes it: the real kube-scheduler, with
// pods pending that would fit there (pods kept off the pool only by its role label and taint,
// which the Nodes do not carry yet, and the pool's own pods), binds none of them there. Once
// nodelink is back it initializes the Nodes (taint gone, the pool's labels and taint on, in one
// patch): the pool's pods run there, the others never do.
var _ = Describe("Scenario 10: nodelink down while Nodes register: the taint holds them until it returns", func() {
	var (
		s      *Scenario
		linker *faults.Component
	)

	BeforeEach(func() {
		s = NewScenario("nodelink-down")
		s.Start(s.MachineManager("--node-link-selector=" + linkerLabel + "!=standalone"))
		linker = &faults.Component{Name: "nodelink", Binary: binaries["nodelink"], LogDir: filepath.Join(s.Dir, "logs"), Args: []string{
			"--kubeconfig=" + plane.Kubeconfig,
			"--namespace=" + s.NS,
			"--machine-selector=" + linkerLabel + "=standalone",
		}}
		s.Others = append(s.Others, linker)
		startLinker(linker)
	})
	AfterEach(func() { s.Verify() })

	It("keeps every pod off the pool's Nodes until nodelink is back, then runs only the pool's pods there", func() {
		general := faults.MachineDeployment(s.NS, "general", 2)
		db := faults.MachineDeployment(s.NS, "db", 1)
		db.Spec.Template.Metadata.Labels[linkerLabel] = "standalone"
		db.Spec.Template.Spec.Metadata.Labels[dbRole] = ""
		db.Spec.Template.Spec.Taints = []v1beta1.MachineTaint{{Key: dedicatedDB.Key, Value: dedicatedDB.Value, Effect: dedicatedDB.Effect}}
		Expect(k8s.Create(ctx, general)).To(Succeed())
		Expect(k8s.Create(ctx, db)).To(Succeed())
		s.WaitRunning("general", 2, 2*time.Minute)
		first := s.WaitRunning("db", 1, 2*time.Minute)[0]
		Eventually(initialized(first.Status.NodeRef.Name)).Should(Succeed(), "the standalone nodelink initialized the pool's first Node")

		By("creating the pool's pods (3, one per db Node) and 4 others that must stay off the pool (one per Node)")
		Expect(k8s.Create(ctx, dbPods(s.NS))).To(Succeed())
		Expect(k8s.Create(ctx, otherPods(s.NS))).To(Succeed())
		Eventually(podsByPhase(s.NS, "db")).Should(Equal(map[corev1.PodPhase]int{corev1.PodRunning: 1, corev1.PodPending: 2}),
			"one pod of the pool runs on its one Node")
		Eventually(podsByPhase(s.NS, "other")).Should(Equal(map[corev1.PodPhase]int{corev1.PodRunning: 2, corev1.PodPending: 2}),
			"two of the others run on the general Nodes, two wait for a Node")

		By("killing nodelink and scaling the pool to 3: its new Nodes register and stay gated")
		linker.Kill()
		logf("nodelink killed")
		Scale(db, 3)
		var gated []string
		Eventually(func(g Gomega) {
			gated = nil
			for _, n := range s.poolNodes("db") {
				if n.Name == first.Status.NodeRef.Name {
					continue
				}
				g.Expect(ready(n)).To(BeTrue(), "Node %s Ready", n.Name)
				gated = append(gated, n.Name)
			}
			g.Expect(gated).To(HaveLen(2), "new Nodes of the pool")
		}).Should(Succeed())
		logf("the pool's new Nodes registered: %v", gated)
		Consistently(func(g Gomega) {
			for _, name := range gated {
				g.Expect(gatedNode(name)()).To(Succeed())
			}
			g.Expect(podsOn(gated)).To(BeEmpty(), "pods bound to a gated Node")
			g.Expect(podsByPhase(s.NS, "db")()).To(HaveKeyWithValue(corev1.PodPending, 2), "the pool's pods wait for initialized Nodes")
			g.Expect(podsByPhase(s.NS, "other")()).To(HaveKeyWithValue(corev1.PodPending, 2), "the others wait")
		}, gateHeld, time.Second).Should(Succeed())

		By("starting nodelink again: it initializes the Nodes, the pool's pods run there, the others never do")
		startLinker(linker)
		back := time.Now()
		for _, name := range gated {
			Eventually(initialized(name)).Should(Succeed())
		}
		logf("the pool's Nodes initialized %s after nodelink came back", time.Since(back).Round(100*time.Millisecond))
		s.WaitRunning("db", 3, 2*time.Minute)
		dbNodes := append([]string{first.Status.NodeRef.Name}, gated...)
		Eventually(func() []string {
			var on []string
			for _, p := range podsOn(dbNodes) {
				if p.Labels["app"] == "db" && p.Status.Phase == corev1.PodRunning {
					on = append(on, p.Spec.NodeName)
				}
			}
			slices.Sort(on)
			return on
		}).Should(ConsistOf(dbNodes), "a Running pod of the pool on each of its Nodes")
		offPool := func(g Gomega) {
			for _, p := range podsOn(dbNodes) {
				g.Expect(p.Labels).To(HaveKeyWithValue("app", "db"), "pod %s/%s on the pool's Node %s", p.Namespace, p.Name, p.Spec.NodeName)
			}
			g.Expect(podsByPhase(s.NS, "other")()).To(HaveKeyWithValue(corev1.PodPending, 2), "the others still wait")
		}
		Consistently(offPool, 5*time.Second, time.Second).Should(Succeed())
		for _, r := range tracker.NodesOf(s.NS) {
			if slices.Contains(gated, r.Name) {
				logf("Node %s was held by its taint for %s", r.Name, r.Initialized.Sub(r.Registered).Round(100*time.Millisecond))
			}
		}
	})
})

// startLinker starts the standalone nodelink and waits until it serves its metrics.
func startLinker(c *faults.Component) {
	GinkgoHelper()
	Expect(c.Start()).To(Succeed())
	Expect(c.WaitServing(ctx, time.Minute)).To(Succeed())
	logf("%s started (pid %d), log %s", c.Name, c.Pid(), c.CurrentLog())
}

// poolNodes returns the Nodes registered for the instances of the pool's live Machines.
func (s *Scenario) poolNodes(pool string) []corev1.Node {
	GinkgoHelper()
	machines := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, machines, client.InNamespace(s.NS), client.MatchingLabels{faults.PoolLabel: pool})).To(Succeed())
	uids := map[string]bool{}
	for _, m := range machines.Items {
		uids[string(m.UID)] = true
	}
	nodes := &corev1.NodeList{}
	Expect(k8s.List(ctx, nodes, client.HasLabels{"sim.machineapi.dev/instance"})).To(Succeed())
	var out []corev1.Node
	for _, n := range nodes.Items {
		if uids[n.Labels["sim.machineapi.dev/instance"]] {
			out = append(out, n)
		}
	}
	return out
}

func ready(n corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// gatedNode succeeds while the Node still waits for its initialization: the initialization
// taint on, none of the pool's labels and taints.
func gatedNode(name string) func() error {
	return func() error {
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		switch {
		case !hasTaint(n, v1beta1.NodeUninitializedTaintKey):
			return fmt.Errorf("Node %s lost %s while nodelink is down (taints %v)", name, v1beta1.NodeUninitializedTaintKey, n.Spec.Taints)
		case hasTaint(n, dedicatedDB.Key):
			return fmt.Errorf("Node %s has the pool's taint while nodelink is down", name)
		}
		if _, ok := n.Labels[dbRole]; ok {
			return fmt.Errorf("Node %s has the pool's role label while nodelink is down", name)
		}
		return nil
	}
}

// initialized succeeds once the Node carries the pool's role label and taint, no initialization
// taint, and names its Machine.
func initialized(name string) func(Gomega) {
	return func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
		g.Expect(hasTaint(n, v1beta1.NodeUninitializedTaintKey)).To(BeFalse(), "Node %s still has %s", name, v1beta1.NodeUninitializedTaintKey)
		g.Expect(n.Labels).To(HaveKey(dbRole), "Node %s role label", name)
		g.Expect(n.Spec.Taints).To(ContainElement(And(
			HaveField("Key", dedicatedDB.Key), HaveField("Value", dedicatedDB.Value), HaveField("Effect", dedicatedDB.Effect))), "Node %s taints", name)
		g.Expect(n.Annotations).To(HaveKey(v1beta1.MachineAnnotation), "Node %s names its Machine", name)
	}
}

// podsOn returns the pods of every namespace bound to one of the Nodes.
func podsOn(nodes []string) []corev1.Pod {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods)).To(Succeed())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if slices.Contains(nodes, p.Spec.NodeName) {
			out = append(out, p)
		}
	}
	return out
}

// podsByPhase counts the pods of ns labelled app=<app> that are not being deleted, by phase.
func podsByPhase(ns, app string) func() map[corev1.PodPhase]int {
	return func() map[corev1.PodPhase]int {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return nil
		}
		out := map[corev1.PodPhase]int{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				out[p.Status.Phase]++
			}
		}
		return out
	}
}

// dbPods is a Deployment of 3 pods for the db pool: they select its role label, tolerate its
// taint (not the initialization taint), one per Node.
func dbPods(ns string) *appsv1.Deployment {
	d := spread(ns, "db", 3)
	d.Spec.Template.Spec.NodeSelector = map[string]string{dbRole: ""}
	d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations,
		corev1.Toleration{Key: dedicatedDB.Key, Operator: corev1.TolerationOpEqual, Value: dedicatedDB.Value, Effect: dedicatedDB.Effect})
	return d
}

// otherPods is a Deployment of 4 pods that must stay off the db pool: a required affinity
// against its role label, no toleration for its taint, one per Node. Nothing else keeps them off
// a Node: before its initialization only the initialization taint does.
func otherPods(ns string) *appsv1.Deployment {
	d := spread(ns, "other", 4)
	d.Spec.Template.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: dbRole, Operator: corev1.NodeSelectorOpDoesNotExist}},
		}}},
	}
	return d
}

// spread is a Deployment of pods labelled app=<name>, at most one per Node (a required
// anti-affinity), tolerating the not-ready and unreachable taints (as webDeployment).
func spread(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
							TopologyKey:   corev1.LabelHostname,
						}},
					}},
					Tolerations: []corev1.Toleration{
						{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists},
						{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists},
					},
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers:                    []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
}
