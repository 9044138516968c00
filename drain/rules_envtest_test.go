package drain_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"
	"machineapi.dev/drain/internal/test"
)

// The drain policy's rules, order groups, pod deadline, unreachable bound and volume wait, on a
// real API server whose disruption controller computes PodDisruptionBudget status.
var _ = Describe("Drain rules", func() {
	var d *drain.Drainer
	BeforeEach(func() {
		var err error
		d, err = drain.New(env.Client, drain.Options{})
		Expect(err).NotTo(HaveOccurred())
	})
	step := func(ctx context.Context, f *fixture, s drain.Step) *drain.Result {
		GinkgoHelper()
		res, err := d.Drain(ctx, f.node, s)
		Expect(err).NotTo(HaveOccurred())
		return res
	}
	rule := func(name string, b drain.PodBehavior, order int32, sel string) drain.PodRule {
		return drain.PodRule{Name: name, Behavior: b, Order: order, Pods: []drain.PodSelector{{Labels: selector(sel)}}}
	}

	It("leaves the pods a Skip rule selects, and is done without them", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		f.create(ctx, f.pod("db-0").Label("app", "db").Running(), f.pod("api-0").Running())
		rules := drain.Step{Rules: []drain.PodRule{rule("rule keep-db", drain.BehaviorSkip, 0, "app=db")}}

		res := step(ctx, f, rules)
		Expect(res.Evicted).To(Equal(f.keys("api-0")))
		Expect(res.Skipped).To(ConsistOf(drain.SkippedPod{Pod: f.key("db-0"), Reason: "skipped by rule keep-db"}))
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		Expect(step(ctx, f, rules).Done).To(BeTrue())
		Expect(f.getPod(ctx, "db-0").DeletionTimestamp).To(BeNil(), "the skipped pod stays, untouched")
	})

	It("never evicts a WaitCompleted pod, and is done once it has completed", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		f.create(ctx, f.pod("job-0").Label("app", "job").Running())
		rules := drain.Step{Rules: []drain.PodRule{rule("rule jobs", drain.BehaviorWaitCompleted, 0, "app=job")}}

		for range 2 {
			res := step(ctx, f, rules)
			Expect(res.Done).To(BeFalse())
			Expect(res.Evicted).To(BeEmpty())
			Expect(res.Blocked).To(ConsistOf(HaveField("Cause", drain.CauseWaitCompleted)))
			Expect(res.Summary()).To(ContainSubstring("pod " + f.namespace + "/job-0 not evicted: waits until it completes (WaitCompleted by rule jobs)"))
		}
		Expect(f.getPod(ctx, "job-0").DeletionTimestamp).To(BeNil())

		By("the job's container exits: the kubelet reports the pod Succeeded")
		pod := f.getPod(ctx, "job-0")
		pod.Status.Phase = corev1.PodSucceeded
		_, err := f.client.CoreV1().Pods(f.namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		res := step(ctx, f, rules)
		Expect(res.Done).To(BeTrue())
		Expect(res.Evicted).To(BeEmpty(), "a completed WaitCompleted pod is not evicted either")
	})

	It("drains order groups lowest first: the second group's first eviction comes after the first group's last pod is gone", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		f.create(ctx, f.pod("api-0").Running(), f.pod("api-1").Running(), f.pod("db-0").Label("app", "db").Running())
		rules := drain.Step{Rules: []drain.PodRule{rule("rule db-last", drain.BehaviorDrain, 10, "app=db")}}

		res := step(ctx, f, rules)
		Expect(res.Evicted).To(Equal(f.keys("api-0", "api-1")))
		Expect(res.Blocked).To(ConsistOf(HaveField("Cause", drain.CauseDrainOrder)))

		By("one pod of the first group is gone, the other still terminating: the second group waits")
		Expect(f.client.CoreV1().Pods(f.namespace).Delete(ctx, "api-0", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
		res = step(ctx, f, rules)
		Expect(res.Evicted).To(BeEmpty())
		Expect(res.Terminating).To(Equal(f.keys("api-1")))
		Expect(f.getPod(ctx, "db-0").DeletionTimestamp).To(BeNil(), "db-0 is not evicted while api-1 is on the node")

		By("the first group's last pod is gone: the second group drains")
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		res = step(ctx, f, rules)
		Expect(res.Evicted).To(Equal(f.keys("db-0")))
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		Expect(step(ctx, f, rules).Done).To(BeTrue())
	})

	It("lets a pod's label override the rules", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node(""))
		f.create(ctx,
			f.pod("web-0").Label("app", "web").Running(),
			f.pod("web-1").Label("app", "web").Label(drain.DefaultSkipLabelKey, "order-0").Running())
		rules := drain.Step{Rules: []drain.PodRule{rule("rule keep-web", drain.BehaviorSkip, 0, "app=web")}}

		res := step(ctx, f, rules)
		Expect(res.Evicted).To(Equal(f.keys("web-1")), "the label order-0 drains the pod the Skip rule would leave")
		Expect(res.Skipped).To(ConsistOf(HaveField("Pod", f.key("web-0"))))
	})

	It("deletes a pod its budget blocks on a node unreachable for longer than the bound, and only then", func(ctx SpecContext) {
		// The API server stamps deletion times with the wall clock; the drainer's clock starts there.
		clock := clocktesting.NewFakePassiveClock(time.Now().Truncate(time.Second))
		lost := clock.Now()
		f := newFixture(ctx, test.Node("").ReadySince(corev1.ConditionUnknown, lost))
		f.create(ctx, f.pod("web-0").Label("app", "web").Running())
		_, err := test.CreatePDB(ctx, f.client, test.PDB(f.namespace, "web").MinAvailable(1).Build())
		Expect(err).NotTo(HaveOccurred())
		Eventually(test.BudgetAllows(ctx, f.client, f.key("web"), 0)).Should(Succeed())
		d, err := drain.New(env.Client, drain.Options{Clock: clock})
		Expect(err).NotTo(HaveOccurred())

		clock.SetTime(lost.Add(drain.DefaultUnreachableDeleteAfter - time.Second))
		res, err := d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(BeEmpty())
		Expect(res.Blocked).To(ConsistOf(HaveField("Cause", drain.CausePodDisruptionBudget)), "within the bound the budget holds")
		Expect(res.NextDeletion).To(BeTemporally("==", lost.Add(drain.DefaultUnreachableDeleteAfter)))
		Expect(f.getPod(ctx, "web-0").DeletionTimestamp).To(BeNil())

		clock.SetTime(lost.Add(drain.DefaultUnreachableDeleteAfter))
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(ConsistOf(HaveField("Pod", f.key("web-0"))))
		Expect(res.Summary()).To(ContainSubstring("unreachable since"))
		Expect(res.DeletionSummary()).To(ContainSubstring(f.namespace + "/web-0 (grace period 1s, over PodDisruptionBudget " + f.namespace + "/web allowing 0 disruptions)"))
		Expect(f.getPod(ctx, "web-0").DeletionGracePeriodSeconds).To(Equal(ptr.To[int64](1)))

		By("no kubelet finishes it: once overdue, the drain stops waiting and is done")
		clock.SetTime(clock.Now().Add(time.Minute))
		res, err = d.Drain(ctx, f.node, drain.Step{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeTrue())
	})

	It("deletes a pod its budget blocks with its own 30s grace period at the pod deadline minus 30s", func(ctx SpecContext) {
		clock := clocktesting.NewFakePassiveClock(time.Now().Truncate(time.Second))
		start := clock.Now()
		f := newFixture(ctx, test.Node(""))
		f.create(ctx, f.pod("web-0").Label("app", "web").GracePeriod(30).Running())
		_, err := test.CreatePDB(ctx, f.client, test.PDB(f.namespace, "web").MinAvailable(1).Build())
		Expect(err).NotTo(HaveOccurred())
		Eventually(test.BudgetAllows(ctx, f.client, f.key("web"), 0)).Should(Succeed())
		d, err := drain.New(env.Client, drain.Options{Clock: clock})
		Expect(err).NotTo(HaveOccurred())
		s := drain.Step{StartedAt: start, PodDeadline: start.Add(2 * time.Minute)}

		clock.SetTime(start.Add(89 * time.Second))
		res, err := d.Drain(ctx, f.node, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(BeEmpty())
		Expect(res.NextDeletion).To(BeTemporally("==", start.Add(90*time.Second)))
		Expect(res.Summary()).To(ContainSubstring("unless gone before (pod deadline"))
		Expect(f.getPod(ctx, "web-0").DeletionTimestamp).To(BeNil(), "a second before deadline − grace the budget still holds")

		clock.SetTime(start.Add(90 * time.Second))
		res, err = d.Drain(ctx, f.node, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Deleted).To(HaveLen(1))
		Expect(res.Deleted[0].GracePeriodSeconds).To(Equal(int64(30)))
		Expect(res.Deleted[0].PodDisruptionBudgets).To(Equal([]drain.PodDisruptionBudgetRef{{NamespacedName: f.key("web"), DisruptionsAllowed: 0}}))
		pod := f.getPod(ctx, "web-0")
		Expect(pod.DeletionGracePeriodSeconds).To(Equal(ptr.To[int64](30)), "the pod gets its own grace period")
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		res, err = d.Drain(ctx, f.node, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Done).To(BeTrue())
	})

	It("waits in the volume wait for the evicted pod's VolumeAttachment, not the skipped pod's, and ends once it is gone", func(ctx SpecContext) {
		f := newFixture(ctx, test.Node("").Ready(corev1.ConditionTrue))
		for _, v := range []string{"keep", "moved"} {
			createVolume(ctx, f, v)
		}
		f.create(ctx,
			f.pod("keep-0").Label(drain.DefaultSkipLabelKey, drain.DefaultSkipLabelValue).Claim("keep").Running(),
			f.pod("moved-0").Claim("moved").Running())
		res := step(ctx, f, drain.Step{})
		Expect(res.Evicted).To(Equal(f.keys("moved-0")))
		Expect(f.kubelet.FinishTerminatingPods(ctx)).To(Equal(1))
		Expect(step(ctx, f, drain.Step{}).Done).To(BeTrue())

		w, err := d.Volumes(ctx, f.node)
		Expect(err).NotTo(HaveOccurred())
		Expect(w.Waiting).To(ConsistOf(HaveField("PersistentVolume", f.namespace+"-moved")))
		Expect(w.Ignored).To(ConsistOf(And(HaveField("PersistentVolume", f.namespace+"-keep"), HaveField("Reason", ContainSubstring("used by pod "+f.namespace+"/keep-0")))))

		By("the attach-detach controller detaches the freed volume")
		Expect(f.client.StorageV1().VolumeAttachments().Delete(ctx, f.namespace+"-moved", metav1.DeleteOptions{})).To(Succeed())
		w, err = d.Volumes(ctx, f.node)
		Expect(err).NotTo(HaveOccurred())
		Expect(w.Waiting).To(BeEmpty())
		Expect(w.Ignored).To(HaveLen(1))
	})
})

// createVolume creates a CSI PersistentVolume <ns>-<name>, a claim <name> bound to it, and its
// VolumeAttachment <ns>-<name> to the fixture's node, as the attach-detach controller would once
// a pod using it runs there.
func createVolume(ctx context.Context, f *fixture, name string) {
	GinkgoHelper()
	pvName := f.namespace + "-" + name
	_, err := f.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: pvName}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = f.client.CoreV1().PersistentVolumeClaims(f.namespace).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pvName,
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = f.client.StorageV1().VolumeAttachments().Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "disk.example.com", NodeName: f.node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pvName)}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}
