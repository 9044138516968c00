package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/test/builder"
	"machineapi.dev/cluster-api/internal/test/envtest"
)

// A Cluster whose Nodes live in a workload cluster with its own API server: its Machines are in
// the management cluster (the suite's), its Nodes in a second envtest API server, reached through
// the kubeconfig in a Secret. The Machines are created here with their providerIDs, as the
// provider that made their instances would have recorded them, and the workload cluster's Nodes
// as their kubelets would register them. (machine-manager is scoped away from remote-nodes
// Machines; see suite_test.go.)
var _ = Describe("A Cluster whose Nodes live in a workload cluster", Ordered, func() {
	const name = "remote"
	var (
		ns       string
		workload *envtest.Environment
		wl       client.Client
		machines []*machinev1.Machine
	)

	BeforeAll(func() {
		var err error
		workload, err = envtest.StartWorkload(3 * time.Second)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = workload.Stop() }) // stopped already by a spec, normally
		wl, err = client.New(workload.Config, client.Options{})
		Expect(err).NotTo(HaveOccurred())
		ns = newNamespace()
	})

	// remoteMachine creates a Machine of the Cluster and its Node in the workload cluster.
	remoteMachine := func(id string) *machinev1.Machine {
		GinkgoHelper()
		m := builder.Machine(ns, "m-"+id).InCluster(name).Remote().WithProviderID("remote:///" + id).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Expect(wl.Create(ctx, builder.Node("node-"+id, m.Spec.ProviderID))).To(Succeed())
		machines = append(machines, m)
		return m
	}

	linkedTo := func(m *machinev1.Machine) func(Gomega) string {
		return func(g Gomega) string {
			got := &machinev1.Machine{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			if got.Status.NodeRef == nil {
				return ""
			}
			return got.Status.NodeRef.Name
		}
	}

	It("links the Cluster's Machines to the workload cluster's Nodes", func() {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-kubeconfig"},
			Data:       map[string][]byte{"value": workload.KubeConfig},
		}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		// A management-cluster Node with the same providerID must not be taken: the Machine's
		// Node is in the workload cluster.
		decoy := builder.Node("decoy-"+ns, "remote:///a")
		Expect(k8s.Create(ctx, decoy)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, decoy)).To(Succeed()) })
		Expect(k8s.Create(ctx, builder.Cluster(ns, name).WithKubeconfig(secret.Name).Build())).To(Succeed())
		m := remoteMachine("a")

		Eventually(linkedTo(m)).Should(Equal("node-a"))
		Eventually(func(g Gomega) map[string]string {
			return nodeOf(wl, m)(g).Annotations
		}).Should(HaveKeyWithValue(machinev1.MachineAnnotation, m.Name))
		Eventually(conditionOf(ns, name, v1beta1.WorkloadAPIReachableCondition)).Should(Equal("True/Reachable"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(decoy), decoy)).To(Succeed())
		Expect(decoy.Annotations).NotTo(HaveKey(machinev1.MachineAnnotation))
		Eventually(eventsFor(ns, name)).Should(containing("RemoteNodeLinkingStarted"))
	})

	It("picks up a rotated kubeconfig from the Secret", func() {
		rotated, err := workload.NewAdminKubeconfig("rotated-admin")
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "remote-kubeconfig"}}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secret.Data["value"] = rotated
		Expect(k8s.Update(ctx, secret)).To(Succeed())
		Eventually(eventsFor(ns, name)).Should(containing("the kubeconfig changed"))

		m := remoteMachine("b")
		Eventually(linkedTo(m)).Should(Equal("node-b"))
		Expect(linkedTo(machines[0])(Default)).To(Equal("node-a"))
		Expect(conditionOf(ns, name, v1beta1.WorkloadAPIReachableCondition)(Default)).To(Equal("True/Reachable"))
	})

	It("reports the workload API server unreachable, and deletes nothing because of it", func() {
		_ = workload.Stop() // killed if it does not stop within 3s, hence no error check
		Eventually(conditionOf(ns, name, v1beta1.WorkloadAPIReachableCondition)).Should(Equal("False/Unreachable"))
		Eventually(eventsFor(ns, name)).Should(containing("Warning Unreachable"))

		Consistently(func(g Gomega) {
			for _, m := range machines {
				got := &machinev1.Machine{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
				g.Expect(got.DeletionTimestamp).To(BeNil())
				g.Expect(got.Status.NodeRef).NotTo(BeNil())
				linked := findCondition(got.Status.Conditions, nodelink.ConditionNodeLinked)
				g.Expect(linked).NotTo(BeNil())
				g.Expect(linked.Reason).To(Equal(nodelink.ReasonLinked), "nothing is unlinked while unreachable")
			}
			c := &v1beta1.Cluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
			g.Expect(c.DeletionTimestamp).To(BeNil())
			g.Expect(c.Status.Machines).To(Equal(int32(2)))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	It("stops linking and goes away when the Cluster is deleted, even while unreachable", func() {
		c := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(gone(c)).Should(BeTrue())
		Expect(memberMachines(ns, name)(Default)).To(BeEmpty())
		Eventually(eventsFor(ns, name)).Should(containing("RemoteNodeLinkingStopped"), "events are written asynchronously, maybe after the Cluster is gone")
	})
})

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

var _ = Describe("A Cluster whose kubeconfig Secret is missing or unusable", func() {
	It("says what to fix in WorkloadAPIReachable, and recovers once the Secret is right", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, builder.Cluster(ns, "lost").WithKubeconfig("lost-kubeconfig").Build())).To(Succeed())
		Eventually(conditionOf(ns, "lost", v1beta1.WorkloadAPIReachableCondition)).Should(Equal("False/KubeconfigSecretNotFound"))

		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost-kubeconfig"},
			Data:       map[string][]byte{"value": []byte("not: [a kubeconfig")},
		}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		Eventually(conditionOf(ns, "lost", v1beta1.WorkloadAPIReachableCondition)).Should(Equal("False/KubeconfigInvalid"))
		Expect(clusterStatus(ns, "lost")(Default)).To(HaveField("Phase", v1beta1.ClusterPhaseProvisioned),
			"a bad kubeconfig does not stop the rest of the Cluster")
	})
})

var _ = Describe("A Cluster whose workload API server never answers", func() {
	It("stays WorkloadAPIReachable=False/Unreachable while its linker restarts, without flapping", func() {
		ns := newNamespace()
		kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: down
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: down, user: u}
current-context: c
`
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "down-kubeconfig"}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
		Expect(k8s.Create(ctx, secret)).To(Succeed())
		m := builder.Machine(ns, "m").InCluster("down").Remote().WithProviderID("remote:///down").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Expect(k8s.Create(ctx, builder.Cluster(ns, "down").WithKubeconfig(secret.Name).Build())).To(Succeed())

		Eventually(conditionOf(ns, "down", v1beta1.WorkloadAPIReachableCondition)).Should(Equal("False/Unreachable"))
		// Longer than the suite's linker cache-sync timeout plus restart delay: the linker exits
		// and is restarted at least once meanwhile.
		Consistently(conditionOf(ns, "down", v1beta1.WorkloadAPIReachableCondition), 7*time.Second).Should(Equal("False/Unreachable"))
		Expect(eventsFor(ns, "down")(Default)).NotTo(Or(containing(ReasonOf("LinkerFailed")), containing(ReasonOf("Probing"))))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
		Expect(m.DeletionTimestamp).To(BeNil())
	})
})

// ReasonOf formats a reason as eventsFor reports it.
func ReasonOf(reason string) string { return " " + reason + ": " }
