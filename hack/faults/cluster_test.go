package faults_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Scenario 8: the Machine API in a real little cluster. The control plane runs the real
// kube-controller-manager (every default controller) and kube-scheduler, so what a user of
// `make run` sees is their work: pods of a Deployment scheduled onto the simulated Nodes, the
// disruption controller's PodDisruptionBudget status deciding what a drain may evict, garbage
// collection of what a Machine owns, and namespace deletion.
var _ = Describe("Scenario 8: beside the real kube-controller-manager and kube-scheduler", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("real-cluster")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("schedules a Deployment onto the Machines' Nodes, drains under a budget whose status the disruption controller computes, and garbage-collects and deletes with the namespace", func() {
		md := faults.MachineDeployment(s.NS, "web", 3)
		md.Spec.Template.Spec.Metadata.Labels[faults.PoolLabel] = s.NS
		Expect(k8s.Create(ctx, md)).To(Succeed())
		s.WaitRunning("web", 3, 2*time.Minute)

		By("creating a Deployment of 3 pods: the scheduler puts them on the sim Nodes")
		app := webDeployment(s.NS, 3)
		Expect(k8s.Create(ctx, app)).To(Succeed())
		Eventually(readyPodsByNode(s.NS)).Should(HaveLen(3), "3 Running, Ready pods of the Deployment, one Node each")
		for node := range readyPodsByNode(s.NS)() {
			Expect(node).To(HavePrefix("web-"), "pods run on the scenario's Nodes")
		}

		By("creating a PodDisruptionBudget: kube-controller-manager computes its status")
		pdb := webBudget(s.NS)
		Expect(k8s.Create(ctx, pdb)).To(Succeed())
		Eventually(BudgetAllows(pdb, 0)).Should(Succeed())
		got := &policyv1.PodDisruptionBudget{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		Expect(got.Status.ExpectedPods).To(Equal(int32(3)), "the budget found the Deployment's scale")
		Expect(got.Status.CurrentHealthy).To(Equal(int32(3)))

		By("deleting a Machine whose Node holds a pod: the drain waits and names the budget")
		victim := s.RunningMachines("web")[0]
		node := victim.Status.NodeRef.Name
		Expect(readyPodsByNode(s.NS)()).To(HaveKey(node))
		Expect(k8s.Delete(ctx, &victim)).To(Succeed())
		Eventually(deletingMessage(victim)).Should(ContainSubstring("blocked by PodDisruptionBudget " + s.NS + "/web (allows 0 disruptions)"))
		Consistently(deletingMessage(victim), 5*time.Second).Should(ContainSubstring("PodDisruptionBudget "+s.NS+"/web"),
			"the Machine stays while the budget allows no disruption")

		By("relaxing the budget: the disruption controller allows one disruption, the Machine and its Node go")
		Expect(k8s.Patch(ctx, pdb, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":1}}`)))).To(Succeed())
		Eventually(Gone(&v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: victim.Name}})).WithTimeout(time.Minute).Should(BeTrue())
		Eventually(Gone(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).Should(BeTrue(), "the Node goes with its Machine")
		Eventually(readyPodsByNode(s.NS)).WithTimeout(2*time.Minute).Should(HaveLen(3),
			"the ReplicaSet controller replaced the evicted pod and the scheduler placed it")

		By("deleting a Machine that owns a ConfigMap: the garbage collector deletes the ConfigMap")
		owner := s.RunningMachines("web")[0]
		owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: "owned-by-" + owner.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta1.GroupVersion.String(), Kind: "Machine", Name: owner.Name, UID: owner.UID}}}}
		Expect(k8s.Create(ctx, owned)).To(Succeed())
		Expect(k8s.Delete(ctx, &owner)).To(Succeed())
		Eventually(Gone(owned)).WithTimeout(time.Minute).Should(BeTrue(), "ConfigMap owned by a deleted Machine")
		s.WaitRunning("web", 3, 2*time.Minute)

		By("deleting the namespace with its Machines in it: the deletion completes and no Node stays")
		var nodes []string
		for _, m := range s.RunningMachines("web") {
			nodes = append(nodes, m.Status.NodeRef.Name)
		}
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.NS}})).To(Succeed())
		Eventually(Gone(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.NS}})).WithTimeout(3*time.Minute).Should(BeTrue(),
			"namespace %s deleted", s.NS)
		for _, n := range nodes {
			Expect(Gone(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})()).To(BeTrue(), "Node %s of a Machine of the deleted namespace", n)
		}
	})
})

// webDeployment is a Deployment of pods labelled app=web that tolerate the not-ready and
// unreachable taints (not every taint: a pod tolerating node.kubernetes.io/unschedulable is put
// back on cordoned Nodes, and two drains would evict it to and fro forever) and run only on the
// Nodes of the scenario's pool, at most one per Node (a required anti-affinity: a replacement pod
// waits for a Node without one rather than doubling up, so "one pod per Node" is the scheduler's
// guarantee, not luck).
func webDeployment(ns string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{faults.PoolLabel: ns},
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
					Containers:                    []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
}

// webBudget is a PodDisruptionBudget over webDeployment's pods that allows no disruption
// (maxUnavailable 0) until it is relaxed.
func webBudget(ns string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
}

// readyPodsByNode returns, by Node name, the Deployment's pods that are Running and Ready and not
// being deleted.
func readyPodsByNode(ns string) func() map[string]string {
	return func() map[string]string {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"}); err != nil {
			return nil
		}
		out := map[string]string{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					out[p.Spec.NodeName] = p.Name
				}
			}
		}
		return out
	}
}

// deletingMessage returns the Machine's Deleting condition as "Reason: message" ("gone" once it is
// deleted).
func deletingMessage(m v1beta1.Machine) func() string {
	return func() string {
		got := &v1beta1.Machine{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(&m), got); err != nil {
			if apierrors.IsNotFound(err) {
				return "gone"
			}
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.DeletingCondition)
		if c == nil {
			return ""
		}
		return strings.Join([]string{c.Reason, c.Message}, ": ")
	}
}
