package machine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machine"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
)

// Deleting a Machine with MachineDrainRules, a pod deadline, an unreachable Node and volumes, at
// the reconcile-once level: the real disruption controller computes the budgets; the test plays
// the kubelet (it finishes terminating pods) and the attach-detach controller.
var _ = Describe("Draining a deleted Machine's Node by its rules and deadlines", func() {
	var (
		f  *onceFixture
		ns string
		t0 time.Time
	)
	BeforeEach(func() {
		// The API server stamps deletion times with the wall clock, which the drain compares
		// with its own clock on an unreachable Node: the fake clock starts there.
		t0 = time.Now().Truncate(time.Second)
		f = newOnceFixture(t0)
		ns = f.ns
	})
	drained := func(m *v1beta1.Machine) string {
		GinkgoHelper()
		c := f.conditionOf(m, v1beta1.DrainedCondition)
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
	deleting := func(m *v1beta1.Machine) string {
		GinkgoHelper()
		c := f.conditionOf(m, v1beta1.DeletingCondition)
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}

	It("leaves the pods a Skip rule selects, drains one whose label overrides the rule, and waits for a WaitCompleted pod to complete", func() {
		m, node := f.running(builder.Machine(ns, "rules"))
		Expect(k8s.Create(ctx, builder.DrainRule(ns, "keep-db").Behavior(v1beta1.DrainBehaviorSkip).Pods(map[string]string{"app": "db"}).Build())).To(Succeed())
		Expect(k8s.Create(ctx, builder.DrainRule(ns, "jobs").Behavior(v1beta1.DrainBehaviorWaitCompleted).Pods(map[string]string{"app": "job"}).Build())).To(Succeed())
		runningPod(ns, "db-0", node.Name, map[string]string{"app": "db"})
		runningPod(ns, "db-1", node.Name, map[string]string{"app": "db", v1beta1.DrainLabel: "order-0"})
		runningPod(ns, "job-0", node.Name, map[string]string{"app": "job"})
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		expect.Reconciled(ctx, f.r, m)
		Expect(drained(m)).To(And(HavePrefix("False/Draining"),
			ContainSubstring("pod "+ns+"/job-0 not evicted: waits until it completes (WaitCompleted by MachineDrainRule "+ns+"/jobs)")))
		Expect(f.series("machineapi_drains_blocked")).To(Equal(map[string]float64{f.labels("reason", "WaitCompleted"): 1}),
			"the metrics say what holds the drain")
		Expect(terminatingOrGone(ns, "db-1")).To(BeTrue(), "the label order-0 overrides the Skip rule")
		Expect(terminatingOrGone(ns, "db-0")).To(BeFalse())
		Expect(terminatingOrGone(ns, "job-0")).To(BeFalse())
		finishTerminatingPods(ns)

		expect.Reconciled(ctx, f.r, m)
		Expect(drained(m)).To(HavePrefix("False/Draining"), "job-0 still runs")
		Expect(terminatingOrGone(ns, "job-0")).To(BeFalse(), "a WaitCompleted pod is never evicted")

		By("the job completes")
		completePod(ns, "job-0")
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue(), "drained, the Machine went on and is gone")
		Expect(terminatingOrGone(ns, "db-0")).To(BeFalse(), "the pod the Skip rule selects stays")
	})

	It("drains order groups lowest first: the second group's first eviction after the first group's last pod is gone", func() {
		m, node := f.running(builder.Machine(ns, "ordered"))
		Expect(k8s.Create(ctx, builder.DrainRule(ns, "db-last").Order(10).Pods(map[string]string{"app": "db"}).Build())).To(Succeed())
		runningPod(ns, "api-0", node.Name, nil)
		runningPod(ns, "db-0", node.Name, map[string]string{"app": "db"})
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		Expect(expect.Reconciled(ctx, f.r, m).RequeueAfter).To(BeNumerically(">", 0))
		Expect(terminatingOrGone(ns, "api-0")).To(BeTrue())
		Expect(drained(m)).To(ContainSubstring("pod " + ns + "/db-0 waits for order group 0 to finish first (1 pod left); its own group is 10 (Drain by MachineDrainRule " + ns + "/db-last)"))
		Expect(f.series("machineapi_drains_blocked")).To(Equal(map[string]float64{f.labels("reason", "DrainOrder"): 1}))
		expect.Reconciled(ctx, f.r, m)
		Expect(terminatingOrGone(ns, "db-0")).To(BeFalse(), "api-0 is still terminating")

		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(terminatingOrGone(ns, "db-0")).To(BeTrue(), "the first group is gone: the second drains")
		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
	})

	It("deletes a pod its budget blocks with its own 30s grace period at drainDeadlineSeconds minus 30s, and names it in an event", func() {
		m, node := f.running(builder.Machine(ns, "deadline").WithDeletion(v1beta1.MachineDeletionSpec{DrainDeadlineSeconds: ptrTo[int32](120)}))
		runningPod(ns, "web-0", node.Name, map[string]string{"app": "web"})
		blockingPDB(ns, "web", map[string]string{"app": "web"}, 1)
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		Expect(expect.Reconciled(ctx, f.r, m).RequeueAfter).To(Equal(2*time.Second), "the drain polls")
		deleteAt := t0.Add(90 * time.Second).UTC().Format(time.RFC3339)
		Expect(deleting(m)).To(And(HavePrefix("True/DrainingNode"),
			ContainSubstring("pod "+ns+"/web-0 blocked by PodDisruptionBudget "+ns+"/web (allows 0 disruptions); deleted at "+deleteAt+" unless gone before")))
		Expect(f.series("machineapi_drains_in_progress")).To(Equal(map[string]float64{f.labels(): 1}))
		Expect(f.series("machineapi_machine_deletions")).To(Equal(map[string]float64{f.labels("step", machine.ReasonDrainingNode): 1}))
		Expect(f.series("machineapi_drains_blocked")).To(Equal(map[string]float64{f.labels("reason", "PodDisruptionBudget"): 1}))
		Expect(expect.Fetched(ctx, k8s, m).Status.Deletion.DrainBlockedBy).To(Equal([]string{"PodDisruptionBudget"}),
			"what holds the drain is in the status: the gauge is computed from it")

		By("a second before the deadline minus its grace period, the budget still holds it, and the drain comes back right then")
		f.clock.SetTime(t0.Add(89 * time.Second))
		Expect(expect.Reconciled(ctx, f.r, m).RequeueAfter).To(Equal(time.Second))
		Expect(f.series("machineapi_drain_blocked_oldest_seconds")).To(Equal(map[string]float64{f.labels("reason", "PodDisruptionBudget"): 89}),
			"blocked since the drain started, 89s ago")
		Expect(terminatingOrGone(ns, "web-0")).To(BeFalse())
		Expect(f.events()).NotTo(ContainElement(ContainSubstring(machine.EventPodsDeleted)))

		By("at the deadline minus 30s it is deleted with its 30s grace period, and an event names it and its budget")
		f.clock.SetTime(t0.Add(90 * time.Second))
		expect.Reconciled(ctx, f.r, m)
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-0"}, pod)).To(Succeed())
		Expect(pod.DeletionGracePeriodSeconds).To(Equal(ptrTo[int64](30)))
		Expect(f.events()).To(ContainElement(And(HavePrefix("Warning "+machine.EventPodsDeleted),
			ContainSubstring(ns+"/web-0 (grace period 30s, over PodDisruptionBudget "+ns+"/web allowing 0 disruptions)"))))
		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
		Expect(f.series("machineapi_drains_blocked")).To(BeEmpty(), "no drain left to report")
		Expect(f.series("machineapi_machine_deletions")).To(BeEmpty())
	})

	It("deletes, over its budget, the pod of a Node unreachable for longer than the bound, says so, and skips the volume wait", func() {
		m, node := f.running(builder.Machine(ns, "lost").WithDeletion(v1beta1.MachineDeletionSpec{NodeVolumeDetachTimeoutSeconds: ptrTo[int32](0)}))
		runningPod(ns, "web-0", node.Name, map[string]string{"app": "web"})
		blockingPDB(ns, "web", map[string]string{"app": "web"}, 1)
		createVolume(ns, "data", node.Name) // attached, and never detached: no kubelet unmounts it
		By("the node controller marks the Node unreachable")
		setNodeReady(node.Name, corev1.ConditionUnknown, t0)
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		f.clock.SetTime(t0.Add(time.Minute))
		res := expect.Reconciled(ctx, f.r, m)
		Expect(res.RequeueAfter).To(Equal(2 * time.Second))
		Expect(drained(m)).To(ContainSubstring("draining unreachable node " + node.Name + " (unreachable since " +
			t0.UTC().Format(time.RFC3339) + ": its pods are deleted from " + t0.Add(5*time.Minute).UTC().Format(time.RFC3339) + " on)"))
		Expect(drained(m)).To(ContainSubstring("blocked by PodDisruptionBudget " + ns + "/web"))
		Expect(terminatingOrGone(ns, "web-0")).To(BeFalse(), "within the bound the budget holds")

		f.clock.SetTime(t0.Add(drain.DefaultUnreachableDeleteAfter))
		expect.Reconciled(ctx, f.r, m)
		Expect(drained(m)).To(ContainSubstring("(unreachable since " + t0.UTC().Format(time.RFC3339) + ": its pods are deleted, not evicted)"))
		Expect(f.events()).To(ContainElement(And(HavePrefix("Warning "+machine.EventPodsDeleted),
			ContainSubstring(ns+"/web-0 (grace period 1s, over PodDisruptionBudget "+ns+"/web allowing 0 disruptions): deleted, not evicted: the node has been unreachable since"))))
		Expect(terminatingOrGone(ns, "web-0")).To(BeTrue())

		By("no kubelet finishes it: once overdue, the drain is done, and the volume wait skipped")
		f.clock.SetTime(f.clock.Now().Add(time.Minute))
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
	})

	It("waits for the evicted pod's VolumeAttachment but not the skipped pod's, and goes on once it is gone", func() {
		m, node := f.running(builder.Machine(ns, "volumes"))
		Expect(k8s.Create(ctx, builder.DrainRule(ns, "keep").Behavior(v1beta1.DrainBehaviorSkip).Pods(map[string]string{"app": "keep"}).Build())).To(Succeed())
		keep, moved := createVolume(ns, "keep", node.Name), createVolume(ns, "moved", node.Name)
		runningPod(ns, "keep-0", node.Name, map[string]string{"app": "keep"}, "keep")
		runningPod(ns, "moved-0", node.Name, nil, "moved")
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		expect.Reconciled(ctx, f.r, m)
		Expect(terminatingOrGone(ns, "moved-0")).To(BeTrue())
		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(drained(m)).To(HavePrefix("True/Drained"))
		Expect(deleting(m)).To(Equal(fmt.Sprintf("True/WaitingForVolumeDetach: waiting for 1 volume(s) to detach from Node %s: %s (PersistentVolume %s); "+
			"not waiting for 1: %s (PersistentVolume %s) used by pod %s/keep-0, which stays on the node until the instance goes",
			node.Name, moved, moved, keep, keep, ns)))
		Expect(f.cloud.Instances()).To(HaveLen(1))

		By("the attach-detach controller detaches the freed volume")
		Expect(k8s.Delete(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: moved}})).To(Succeed())
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
		Expect(f.cloud.Instances()).To(BeEmpty())
	})

	It("drains as docs/examples/drainrules.yaml says: ordinary pods, then databases; batch jobs once complete; the log shipper stays", func() {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "examples", "drainrules.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			rule := &v1beta1.MachineDrainRule{}
			Expect(yaml.UnmarshalStrict([]byte(doc), rule)).To(Succeed())
			rule.Namespace = ns
			Expect(k8s.Create(ctx, rule)).To(Succeed())
		}
		m, node := f.running(builder.Machine(ns, "example").WithLabels(map[string]string{"example.com/team": "platform"}))
		runningPod(ns, "api-0", node.Name, nil)
		runningPod(ns, "batch-0", node.Name, map[string]string{"workload": "batch"})
		runningPod(ns, "logs-0", node.Name, map[string]string{"app": "log-shipper"})
		runningPod(ns, "postgres-0", node.Name, map[string]string{"app": "postgres"})
		Expect(k8s.Delete(ctx, m)).To(Succeed())

		expect.Reconciled(ctx, f.r, m)
		Expect(terminatingOrGone(ns, "api-0")).To(BeTrue())
		Expect(terminatingOrGone(ns, "postgres-0")).To(BeFalse(), "databases go last")
		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(terminatingOrGone(ns, "postgres-0")).To(BeTrue())
		finishTerminatingPods(ns)
		expect.Reconciled(ctx, f.r, m)
		Expect(drained(m)).To(ContainSubstring("pod " + ns + "/batch-0 not evicted: waits until it completes (WaitCompleted by MachineDrainRule " + ns + "/batch-jobs-finish)"))
		completePod(ns, "batch-0")
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
		Expect(terminatingOrGone(ns, "logs-0")).To(BeFalse())
		Expect(terminatingOrGone(ns, "batch-0")).To(BeFalse(), "a completed WaitCompleted pod is left for its Job")
	})

	It("skips the volume wait of a Machine with the exclude-wait-for-node-volume-detach annotation", func() {
		m, node := f.running(builder.Machine(ns, "no-wait").WithAnnotations(map[string]string{v1beta1.ExcludeWaitForNodeVolumeDetachAnnotation: ""}))
		createVolume(ns, "data", node.Name)
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		expect.Reconciled(ctx, f.r, m)
		Expect(gone(m)()).To(BeTrue())
	})
})

// runningPod creates a pod bound to node, running and ready, as the scheduler and the kubelet
// leave it, mounting the given claims.
func runningPod(ns, name, node string, labels map[string]string, claims ...string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptrTo[int64](30),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	return pod
}

// completePod reports the pod Succeeded, as the kubelet does once its containers exited 0.
func completePod(ns, name string) {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodSucceeded
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
}

// terminatingOrGone reports whether the pod was evicted or deleted (it has a deletion timestamp)
// or is gone.
func terminatingOrGone(ns, name string) bool {
	GinkgoHelper()
	pod := &corev1.Pod{}
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod)
	if client.IgnoreNotFound(err) == nil && err != nil {
		return true
	}
	Expect(err).NotTo(HaveOccurred())
	return pod.DeletionTimestamp != nil
}

// finishTerminatingPods does what the kubelet does once a terminating pod's containers stopped.
func finishTerminatingPods(ns string) {
	GinkgoHelper()
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp != nil {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}))).To(Succeed())
		}
	}
}

// setNodeReady writes the Node's Ready condition, as the kubelet (True) or the node controller
// (Unknown, once the kubelet stops reporting) would, changed at since.
func setNodeReady(name string, status corev1.ConditionStatus, since time.Time) {
	GinkgoHelper()
	node := &corev1.Node{}
	Expect(k8s.Get(ctx, types.NamespacedName{Name: name}, node)).To(Succeed())
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i].Status, node.Status.Conditions[i].LastTransitionTime = status, metav1.NewTime(since)
		}
	}
	Expect(k8s.Status().Update(ctx, node)).To(Succeed())
}

// createVolume creates a CSI PersistentVolume <ns>-<name>, a claim <name> bound to it, and its
// VolumeAttachment <ns>-<name> to node, as the attach-detach controller would once a pod using it
// runs there. It returns the volume's (and the attachment's) name.
func createVolume(ns, name, node string) string {
	GinkgoHelper()
	pv := ns + "-" + name
	Expect(k8s.Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: pv}},
		},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pv,
		},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "disk.example.com", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
	})).To(Succeed())
	return pv
}
