package faults_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/nodelink"
)

// outage is how long the workload API server stays down: a minute, longer than every interval
// involved (probe 1s, linker restart 2s, cache sync timeout 5s, health check startup timeout 15s).
const outage = time.Minute

// Scenario 6: a Cluster's Nodes live in a workload cluster with its own API server, reached
// through the kubeconfig in a Secret, and that API server goes away. WorkloadAPIReachable must
// turn False; no Machine may be deleted, unlinked or remediated because of it; everything resumes
// when it is back.
var _ = Describe("Scenario 6: the workload API server of a Cluster unreachable", func() {
	var w *remoteWorld
	BeforeEach(func() { w = startRemoteWorld() })
	AfterEach(func() { w.s.Verify() })

	It("keeps every Machine and link through the outage, remediates nothing, and resumes linking after it", func() {
		// Linking resumes only when the remote linker's Node watch reconnects, up to about 30s
		// after the API server is back (client-go's backoff): a startup timeout shorter than that
		// would remediate a Machine made right after the outage (docs/reliability.md).
		w.bringUp(4, 120)
		before := linkedNodes(w.s.NS)

		By("killing the workload API server")
		w.workload.KillAPIServer()
		defer func() { _ = w.workload.StartAPIServer(ctx) }()
		Eventually(reachable(w.cluster)).WithTimeout(30 * time.Second).Should(Equal("False/Unreachable"))
		logf("workload API unreachable")
		Consistently(w.untouched(before, 4), outage, time.Second).Should(Succeed())

		By("starting the workload API server again")
		Expect(w.workload.StartAPIServer(ctx)).To(Succeed())
		Eventually(reachable(w.cluster)).Should(Equal("True/Reachable"))
		Expect(linkedNodes(w.s.NS)).To(Equal(before), "links kept")
		By("scaling the pool once it is back: the new Machine is linked")
		back := time.Now()
		w.scalePool(5)
		Eventually(w.kubelets).Should(Equal(5))
		logf("the Machine made after the outage was linked %s after the workload API came back", time.Since(back).Round(time.Second))
		Expect(faults.CheckLinks(w.s.Subject(), true)).To(BeEmpty())

		By("scaling the pool down with a pod on every workload Node: the Node that goes is drained there")
		w.drainsOnScaleDown(4)
	})
})

// The same outage, with a Machine created while it lasts: its Node cannot be seen (the linker
// says NodeLinked=Unknown/NodesUnreachable), and the health check's nodeStartupTimeoutSeconds
// must not turn that into a remediation.
var _ = Describe("Scenario 6: a Machine created while the workload API server is unreachable", func() {
	var w *remoteWorld
	BeforeEach(func() { w = startRemoteWorld() })
	AfterEach(func() { w.s.Verify() })

	It("waits for its Node instead of remediating it", func() {
		w.bringUp(4, 15)
		before := linkedNodes(w.s.NS)
		w.workload.KillAPIServer()
		defer func() { _ = w.workload.StartAPIServer(ctx) }()
		Eventually(reachable(w.cluster)).WithTimeout(30 * time.Second).Should(Equal("False/Unreachable"))
		w.scalePool(5)
		Eventually(func() []string { return linkReasons(w.s.NS) }).Should(ContainElement("Unknown/"+nodelink.ReasonNodesUnreachable),
			"the new Machine says why it has no Node")
		Consistently(w.untouched(before, 4), outage, time.Second).Should(Succeed())
		Expect(w.workload.StartAPIServer(ctx)).To(Succeed())
		Eventually(w.kubelets).Should(Equal(5), "the Machine made during the outage is linked once its Node registers")
	})
})

// remoteWorld is a scenario with a workload cluster: a second etcd + kube-apiserver holding the
// Nodes, a Cluster whose kubeconfig Secret points there, machine-manager (which leaves the
// Cluster's Machines to the remote linker) and cluster-manager (which links them).
type remoteWorld struct {
	s        *Scenario
	workload *faults.Plane
	wl       client.Client
	cluster  *clusterv1.Cluster
}

func startRemoteWorld() *remoteWorld {
	GinkgoHelper()
	w := &remoteWorld{s: NewScenario("workload-outage")}
	w.s.Expect.RemoteNodes = true
	var err error
	w.workload, err = faults.StartPlane(ctx, *k8sBinDir, filepath.Join(w.s.Dir, "workload"), faults.WithoutNodeLifecycle)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.workload.Stop)
	cfg, err := clientcmd.BuildConfigFromFlags("", w.workload.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	w.wl, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	w.s.Start(w.s.MachineManager("--node-link-selector=!" + clusterv1.RemoteNodesLabel))
	cm := &faults.Component{Name: "cluster-manager", Binary: binaries["cluster-manager"], LogDir: filepath.Join(w.s.Dir, "logs"), Args: []string{
		"--kubeconfig=" + plane.Kubeconfig,
		"--workload-probe-interval=1s", "--kubeconfig-poll-interval=2s", "--linker-restart-delay=2s",
		"--linker-cache-sync-timeout=5s", "--sim-cluster-provision-delay=500ms", "--sim-cluster-delete-delay=200ms",
	}}
	w.s.Others = append(w.s.Others, cm)
	Expect(cm.Start()).To(Succeed())
	Expect(cm.WaitServing(ctx, time.Minute)).To(Succeed())
	return w
}

// bringUp creates the kubeconfig Secret, a Cluster with one pool of n Machines and a health
// check over them (Machines without a Node startupTimeout seconds after provisioning are
// unhealthy), and waits until every Machine is linked to its workload Node.
func (w *remoteWorld) bringUp(n, startupTimeout int32) {
	GinkgoHelper()
	kubeconfig, err := os.ReadFile(w.workload.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.s.NS, Name: "workload-kubeconfig"},
		Data:       map[string][]byte{"value": kubeconfig},
	})).To(Succeed())
	tmpl := faults.Template("remote")
	w.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.s.NS, Name: "remote"},
		Spec: clusterv1.ClusterSpec{
			KubeconfigSecretRef: &clusterv1.KubeconfigSecretReference{Name: "workload-kubeconfig"},
			WorkerPools:         []clusterv1.WorkerPool{{Name: "pool", Replicas: ptr.To(n), Template: &tmpl}},
		},
	}
	Expect(k8s.Create(ctx, w.cluster)).To(Succeed())
	// A remote Machine's Ready is Unknown (NodeInOtherCluster): machine-manager cannot see its
	// Node, so the pool's sets never count it ready (docs/reliability.md).
	w.s.Expect.NotReadySets[w.cluster.Name+"-pool"] = true
	Expect(k8s.Create(ctx, faults.HealthCheck(w.s.NS, "remote", "remote", 5, startupTimeout, "40%"))).To(Succeed())
	Eventually(w.kubelets).Should(Equal(int(n)), "Machines linked to workload Nodes")
	Eventually(reachable(w.cluster)).Should(Equal("True/Reachable"))
}

// kubelets plays the workload cluster's kubelets (each instance's Node registers there) and
// returns how many Machines are linked to their workload Node.
func (w *remoteWorld) kubelets(g Gomega) int {
	list := &v1beta1.MachineList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(w.s.NS))).To(Succeed())
	linked := 0
	for _, m := range list.Items {
		if m.Spec.ProviderID == "" || m.DeletionTimestamp != nil {
			continue
		}
		node := workloadNode(m)
		if err := w.wl.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
		if m.Status.NodeRef != nil && m.Status.NodeRef.Name == node.Name && meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.NodeLinkedCondition) {
			linked++
		}
	}
	return linked
}

// untouched checks that the links are those of before, nothing is deleting or remediated, at
// least n Machines exist, and the Cluster still says the workload API is unreachable.
func (w *remoteWorld) untouched(before map[string]string, n int) func(Gomega) {
	return func(g Gomega) {
		live, deleting := tracker.Live(w.s.NS)
		g.Expect(tracker.Remediations(w.s.NS)).To(BeEmpty(), "remediated while the workload API is unreachable")
		g.Expect(deleting).To(BeZero(), "Machines deleted while the workload API is unreachable")
		g.Expect(live).To(BeNumerically(">=", n))
		g.Expect(linkedNodes(w.s.NS)).To(Equal(before), "links kept while unreachable")
		g.Expect(reachable(w.cluster)()).To(Equal("False/Unreachable"))
	}
}

// drainsOnScaleDown puts a probe pod on every workload Node, scales the pool down to n, and checks
// that cluster-manager drained, in the workload cluster, the Nodes of the Machines that went
// (cordoned, pod evicted, a Drained event) and left the others alone. The suite plays the workload
// kubelets: an evicted pod's containers stop and its object goes.
func (w *remoteWorld) drainsOnScaleDown(n int) {
	GinkgoHelper()
	Expect(client.IgnoreAlreadyExists(w.wl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.s.NS}}))).To(Succeed())
	nodes := &corev1.NodeList{}
	Expect(w.wl.List(ctx, nodes)).To(Succeed())
	for _, node := range nodes.Items {
		// The namespace's default ServiceAccount, which admission requires of a pod, is created by
		// the workload kube-controller-manager shortly after the namespace: until then the create is
		// refused (403) and is tried again.
		Eventually(func() error {
			return client.IgnoreAlreadyExists(w.wl.Create(ctx, faults.ProbePod(w.s.NS, node.Name, 0, nil)))
		}).WithTimeout(time.Minute).Should(Succeed())
	}
	w.scalePool(n)
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(w.wl.List(ctx, pods, client.InNamespace(w.s.NS))).To(Succeed())
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp != nil {
				g.Expect(client.IgnoreNotFound(w.wl.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
			}
		}
		live, deleting := tracker.Live(w.s.NS)
		g.Expect(live).To(Equal(n))
		g.Expect(deleting).To(BeZero())
	}).WithTimeout(2*time.Minute).Should(Succeed(), "the pool scales down once the workload Node is drained")

	gone := map[string]faults.MachineRecord{}
	for _, r := range tracker.Machines(w.s.NS) {
		if !r.Gone.IsZero() {
			gone["wl-"+r.Name] = r
		}
	}
	Expect(gone).NotTo(BeEmpty())
	Expect(w.wl.List(ctx, nodes)).To(Succeed())
	for _, node := range nodes.Items {
		err := w.wl.Get(ctx, types.NamespacedName{Namespace: w.s.NS, Name: faults.ProbePod(w.s.NS, node.Name, 0, nil).Name}, &corev1.Pod{})
		if r, went := gone[node.Name]; went {
			Expect(node.Spec.Unschedulable).To(BeTrue(), "workload Node %s of deleted Machine %s cordoned", node.Name, r.Name)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the pod on workload Node %s evicted before Machine %s went", node.Name, r.Name)
			// Events are sent asynchronously: the Drained event may reach the API server after
			// the Machine it is about is gone.
			Eventually(func() []faults.EventRecord { return tracker.EventsFor(r.UID) }).WithTimeout(30*time.Second).Should(
				ContainElement(And(HaveField("Reason", "Drained"), HaveField("Note", ContainSubstring("workload cluster")))),
				"Machine %s: cluster-manager's Drained event", r.Name)
			logf("Machine %s went after its workload Node %s was drained", r.Name, node.Name)
			continue
		}
		Expect(node.Spec.Unschedulable).To(BeFalse(), "workload Node %s of a kept Machine cordoned", node.Name)
		Expect(err).NotTo(HaveOccurred(), "the pod on workload Node %s of a kept Machine", node.Name)
	}
}

// scalePool sets the pool's replicas in the Cluster.
func (w *remoteWorld) scalePool(n int) {
	GinkgoHelper()
	Expect(k8s.Patch(ctx, w.cluster, client.RawPatch(types.JSONPatchType,
		fmt.Appendf(nil, `[{"op":"replace","path":"/spec/workerPools/0/replicas","value":%d}]`, n)))).To(Succeed())
}

// workloadNode is the Node a Machine's instance registers in the workload cluster.
func workloadNode(m v1beta1.Machine) *corev1.Node {
	now := metav1.Now()
	ip := "10.99.0.1"
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ip = a.Address
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "wl-" + m.Name},
		Spec:       corev1.NodeSpec{ProviderID: m.Spec.ProviderID},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}},
		},
	}
}

// reachable returns a Cluster's WorkloadAPIReachable as "Status/Reason".
func reachable(c *clusterv1.Cluster) func() string {
	return func() string {
		got := &clusterv1.Cluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			return err.Error()
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, clusterv1.WorkloadAPIReachableCondition)
		if cond == nil {
			return ""
		}
		return fmt.Sprintf("%s/%s", cond.Status, cond.Reason)
	}
}

// linkReasons returns the NodeLinked "Status/Reason" of every Machine of ns.
func linkReasons(ns string) []string {
	GinkgoHelper()
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, m := range list.Items {
		if c := meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked); c != nil {
			out = append(out, string(c.Status)+"/"+c.Reason)
		}
	}
	return out
}

// linkedNodes maps each linked Machine of ns to its Node's name and UID.
func linkedNodes(ns string) map[string]string {
	GinkgoHelper()
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, m := range list.Items {
		c := meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked)
		if m.Status.NodeRef != nil && c != nil && c.Reason == nodelink.ReasonLinked {
			out[m.Name] = m.Status.NodeRef.Name + "/" + string(m.Status.NodeRef.UID)
		}
	}
	return out
}
