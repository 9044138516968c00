package cluster_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/test/builder"
)

var _ = Describe("A Cluster with worker pools", Ordered, func() {
	var ns string
	const name = "prod"

	BeforeAll(func() { ns = newNamespace() })

	updatePools := func(mutate func([]v1beta1.WorkerPool) []v1beta1.WorkerPool) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			c := &v1beta1.Cluster{}
			g.Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c)).To(Succeed())
			c.Spec.WorkerPools = mutate(c.Spec.WorkerPools)
			g.Expect(k8s.Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
	}

	It("provisions the infrastructure first, then brings up one MachineDeployment and its Machines per pool", func() {
		Expect(k8s.Create(ctx, builder.Cluster(ns, name).WithPool("a", 2).WithPool("b", 1).Build())).To(Succeed())

		Eventually(clusterStatus(ns, name)).Should(HaveField("Phase", v1beta1.ClusterPhaseProvisioning))
		Expect(conditionOf(ns, name, v1beta1.WorkerPoolsReadyCondition)(Default)).To(Equal("False/WaitingForInfrastructure"))
		Expect(deploymentNames(ns)(Default)).To(BeEmpty(), "pools wait for the infrastructure")

		Eventually(clusterStatus(ns, name)).Should(And(
			HaveField("Phase", v1beta1.ClusterPhaseProvisioned),
			HaveField("DesiredMachines", int32(3)), HaveField("Machines", int32(3)), HaveField("ReadyMachines", int32(3))))
		Expect(deploymentNames(ns)(Default)).To(Equal([]string{"prod-a", "prod-b"}))
		Expect(runningMachines(ns, name)(Default)).To(Equal(3))
		for _, typ := range []string{v1beta1.InfrastructureReadyCondition, v1beta1.WorkerPoolsReadyCondition, v1beta1.MachinesReadyCondition} {
			Expect(conditionOf(ns, name, typ)(Default)).To(HavePrefix("True/"), typ)
		}
		Expect(conditionOf(ns, name, v1beta1.WorkloadAPIReachableCondition)(Default)).To(BeEmpty(), "only Clusters with a kubeconfig have it")

		md := &machinev1.MachineDeployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "prod-a"}, md)).To(Succeed())
		want := map[string]string{v1beta1.ClusterNameLabel: name, v1beta1.WorkerPoolLabel: "a"}
		Expect(md.Labels).To(Equal(want))
		Expect(md.Spec.Selector.MatchLabels).To(Equal(want))
		Expect(md.Spec.Template.Metadata.Labels).To(Equal(want))
		for _, m := range memberMachines(ns, name)(Default) {
			Expect(m.Labels).To(HaveKey(v1beta1.WorkerPoolLabel))
			Expect(m.Labels).NotTo(HaveKey(v1beta1.RemoteNodesLabel))
		}
		Eventually(eventsFor(ns, name)).Should(And(containing("WorkerPoolCreated: created MachineDeployment prod-a"), containing("Provisioned")))
	})

	It("scales a pool when its replicas change", func() {
		updatePools(func(p []v1beta1.WorkerPool) []v1beta1.WorkerPool { p[0].Replicas = ptr.To[int32](4); return p })
		Eventually(replicasOf(ns, "prod-a")).Should(Equal(int32(4)))
		Eventually(clusterStatus(ns, name)).Should(And(HaveField("DesiredMachines", int32(5)), HaveField("ReadyMachines", int32(5))))
		Expect(runningMachines(ns, name)(Default)).To(Equal(5))
	})

	It("undoes a manual scale of a pool it owns the size of", func() {
		md := &machinev1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod-b"}}
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)))).To(Succeed())
		Eventually(replicasOf(ns, "prod-b")).Should(Equal(int32(1)))
	})

	It("deletes a pool's MachineDeployment and its Machines when the pool is removed", func() {
		updatePools(func(p []v1beta1.WorkerPool) []v1beta1.WorkerPool { return p[:1] })
		Eventually(deploymentNames(ns)).Should(Equal([]string{"prod-a"}))
		Eventually(func(g Gomega) []string {
			var pools []string
			for _, m := range memberMachines(ns, name)(g) {
				pools = append(pools, m.Labels[v1beta1.WorkerPoolLabel])
			}
			return pools
		}).Should(ConsistOf("a", "a", "a", "a"))
		Eventually(clusterStatus(ns, name)).Should(And(HaveField("DesiredMachines", int32(4)), HaveField("Machines", int32(4))))
		Eventually(eventsFor(ns, name)).Should(containing("WorkerPoolDeleted"))
	})
})

var _ = Describe("An autoscaled worker pool", func() {
	It("gets the node-group bounds and keeps the size the autoscaler gives it", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, builder.Cluster(ns, "auto").WithAutoscaledPool("w", 0, 1, 5).Build())).To(Succeed())
		Eventually(replicasOf(ns, "auto-w")).Should(Equal(int32(1)), "the pool's replicas move into the bounds")
		md := &machinev1.MachineDeployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto-w"}, md)).To(Succeed())
		Expect(md.Annotations).To(And(
			HaveKeyWithValue(machinev1.AutoscalerMinSizeAnnotation, "1"), HaveKeyWithValue(machinev1.AutoscalerMaxSizeAnnotation, "5")))

		// The cluster-autoscaler scales through the scale subresource.
		scale := &machinev1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto-w"}}
		Expect(k8s.SubResource("scale").Patch(ctx, scale, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`)))).To(Succeed())
		Eventually(clusterStatus(ns, "auto")).Should(HaveField("ReadyMachines", int32(2)))
		Consistently(replicasOf(ns, "auto-w"), 2*time.Second).Should(Equal(int32(2)), "the Cluster must not fight the autoscaler")
	})
})

var _ = Describe("A Cluster the provider can never build", func() {
	It("fails with a message naming the field, and creates no machines", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, builder.Cluster(ns, "bad").WithProviderSpec(`{"network":"10.0.0.0/33"}`).WithPool("w", 1).Build())).To(Succeed())
		Eventually(clusterStatus(ns, "bad")).Should(HaveField("Phase", v1beta1.ClusterPhaseFailed))
		Expect(conditionOf(ns, "bad", v1beta1.InfrastructureReadyCondition)(Default)).To(Equal("False/InvalidConfiguration"))
		Expect(meta.FindStatusCondition(clusterStatus(ns, "bad")(Default).Conditions, v1beta1.InfrastructureReadyCondition).Message).
			To(ContainSubstring("spec.providerSpec.network"))
		Expect(deploymentNames(ns)(Default)).To(BeEmpty())
		Eventually(eventsFor(ns, "bad")).Should(containing("Warning Failed"))
	})
})

var _ = Describe("A pool whose MachineDeployment name is taken", func() {
	It("is reported and the other MachineDeployment is left alone", func() {
		ns := newNamespace()
		other := &machinev1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-w"},
			Spec: machinev1.MachineDeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: machinev1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
				Template: machinev1.MachineTemplateSpec{
					Metadata: machinev1.ObjectMeta{Labels: map[string]string{"app": "other"}},
					Spec:     *builder.Pool("x", 1).Template.Spec.DeepCopy(),
				},
			},
		}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Expect(k8s.Create(ctx, builder.Cluster(ns, "c").WithPool("w", 2).Build())).To(Succeed())
		Eventually(conditionOf(ns, "c", v1beta1.WorkerPoolsReadyCondition)).Should(Equal("False/MachineDeploymentConflict"))
		Expect(replicasOf(ns, "c-w")(Default)).To(Equal(int32(0)))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
		Expect(other.Labels).NotTo(HaveKey(v1beta1.ClusterNameLabel))
	})
})

var _ = Describe("Deleting a Cluster", func() {
	It("drains and deletes all its machines, then its infrastructure, then itself, and touches no other cluster", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, builder.Cluster(ns, "doomed").WithPool("w", 2).Build())).To(Succeed())
		Expect(k8s.Create(ctx, builder.Cluster(ns, "survivor").WithPool("w", 1).Build())).To(Succeed())
		standalone := builder.Machine(ns, "standalone").Build()
		Expect(k8s.Create(ctx, standalone)).To(Succeed())
		Eventually(runningMachines(ns, "doomed")).Should(Equal(2))
		Eventually(runningMachines(ns, "survivor")).Should(Equal(1))

		doomedMachines := memberMachines(ns, "doomed")(Default)
		node := nodeOf(k8s, &doomedMachines[0])(Default)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: corev1.PodSpec{NodeName: node.Name, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		survivors := memberMachines(ns, "survivor")(Default)
		doomed := &v1beta1.Cluster{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "doomed"}, doomed)).To(Succeed())
		_, hasInfra := clusterSim.Get(doomed.UID)
		Expect(hasInfra).To(BeTrue())

		Expect(k8s.Delete(ctx, doomed)).To(Succeed())
		Eventually(conditionOf(ns, "doomed", v1beta1.DeletingCondition)).Should(Equal("True/DeletingMachines"))
		_, hasInfra = clusterSim.Get(doomed.UID)
		Expect(hasInfra).To(BeTrue(), "the infrastructure outlives the machines")

		Eventually(gone(pod)).Should(BeTrue(), "the machine's Node is drained")
		Eventually(gone(doomed)).Should(BeTrue())
		Expect(memberMachines(ns, "doomed")(Default)).To(BeEmpty())
		Expect(deploymentNames(ns)(Default)).To(Equal([]string{"survivor-w"}))
		_, hasInfra = clusterSim.Get(doomed.UID)
		Expect(hasInfra).To(BeFalse(), "the infrastructure is deleted before the finalizer goes")
		Expect(gone(node)()).To(BeTrue(), "the machine controller deleted the Node")
		Eventually(eventsFor(ns, "doomed")).Should(And(containing("DeletingMachines"), containing("DeletingInfrastructure")), "events are written asynchronously")

		Consistently(func(g Gomega) []types.UID {
			var uids []types.UID
			for _, m := range memberMachines(ns, "survivor")(g) {
				g.Expect(m.DeletionTimestamp).To(BeNil())
				uids = append(uids, m.UID)
			}
			return uids
		}, 2*time.Second).Should(ConsistOf(survivors[0].UID))
		Expect(gone(standalone)()).To(BeFalse(), "a Machine of no cluster is not touched")
		Expect(clusterStatus(ns, "survivor")(Default)).To(HaveField("Phase", v1beta1.ClusterPhaseProvisioned))
	})
})
