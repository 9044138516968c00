package machinedeployment_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/internal/test/stack"
)

// The reconcile-once level: the suite's manager is stopped, the Reconciler is built by hand with a
// fake clock and a client straight to the API server (which answers the controller's field index
// lookups itself, see expect.Indexed), and nothing happens between two Reconcile calls but what the test
// does: it plays the MachineSet controller by writing the sets' status.
var _ = Describe("Reconciling a MachineDeployment once at a time", Ordered, func() {
	// t0 has whole seconds: the API server keeps times to the second.
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	var (
		ns       string
		clock    *testclock.FakeClock
		recorder *events.FakeRecorder
		writes   *expect.Writes
		r        *machinedeployment.Reconciler
	)
	BeforeAll(func() {
		provider := st.Provider
		Expect(st.Stop()).To(Succeed())
		DeferCleanup(func() {
			var err error
			st, err = stack.Start(env.Config, stack.Options{Provider: provider})
			Expect(err).NotTo(HaveOccurred())
		})
	})
	BeforeEach(func() {
		ns = newNamespace()
		clock = testclock.NewFakeClock(t0)
		recorder = events.NewFakeRecorder(100)
		indexed, err := expect.IndexedClient(ctx, k8s, index.Register)
		Expect(err).NotTo(HaveOccurred())
		writes = expect.RecordWrites(indexed)
		r = &machinedeployment.Reconciler{Deps: reconciler.Deps{Client: writes, APIReader: k8s, Recorder: recorder, Clock: clock}}
		DeferCleanup(func() { removeAll(ns) }) // so that the manager, started again, finds nothing of it
	})

	// setsOf returns the deployment's sets as stored, by revision: "1", "2", ...
	setsOf := func(md *v1beta1.MachineDeployment) map[string]*v1beta1.MachineSet {
		GinkgoHelper()
		out := map[string]*v1beta1.MachineSet{}
		for _, s := range sets(ns) {
			if metav1.IsControlledBy(&s, md) {
				out[s.Annotations[v1beta1.RevisionAnnotation]] = &s
			}
		}
		return out
	}
	replicasOf := func(md *v1beta1.MachineDeployment) map[string]int32 {
		GinkgoHelper()
		out := map[string]int32{}
		for rev, s := range setsOf(md) {
			out[rev] = ptr.Deref(s.Spec.Replicas, 1)
		}
		return out
	}
	// acted writes what the MachineSet controller would once set has acted on its spec: its
	// generation observed, replicas Machines of which available are available.
	acted := func(set *v1beta1.MachineSet, replicas, available int32) {
		GinkgoHelper()
		expect.Fetched(ctx, k8s, set)
		set.Status.ObservedGeneration = set.Generation
		set.Status.Replicas, set.Status.ReadyReplicas, set.Status.AvailableReplicas, set.Status.UpToDateReplicas =
			replicas, available, available, replicas
		Expect(k8s.Status().Update(ctx, set)).To(Succeed())
	}
	progressing := func(md *v1beta1.MachineDeployment) string {
		GinkgoHelper()
		c := meta.FindStatusCondition(expect.Fetched(ctx, k8s, md).Status.Conditions, v1beta1.ProgressingCondition)
		Expect(c).NotTo(BeNil())
		return string(c.Status) + "/" + c.Reason
	}
	// events returns the events recorded since the last call, as "Type Reason Message".
	events := func() []string {
		var out []string
		for {
			select {
			case e := <-recorder.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	It("rolls out one step per reconcile, each after the set it scaled has acted on its spec, writing only what changed", func() {
		md := builder.MachineDeployment(ns, "web", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())

		By("the first reconcile: finalizer, the first set with every replica, its revision, the status")
		Expect(expect.Reconciled(ctx, r, md).RequeueAfter).To(Equal(10*time.Minute+time.Second), "back at the progress deadline")
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 2}))
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonNewSetCreated))
		first := setsOf(md)["1"]
		Expect(writes.To(md.Name)).To(Equal([]expect.Write{{Verb: "patch", Name: md.Name}, {Verb: "patch", Name: md.Name},
			{Verb: "apply", Name: md.Name, Subresource: "status"}}), "finalizer, revision, status")
		Expect(writes.To(first.Name)).To(Equal([]expect.Write{{Verb: "create", Name: first.Name}}))

		By("the set has acted: the rollout is complete; a reconcile with nothing new writes nothing")
		acted(first, 2, 2)
		writes.Reset()
		Expect(expect.Reconciled(ctx, r, md)).To(BeZero(), "no deadline runs once complete")
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
		Expect(events()).To(ContainElement(ContainSubstring(machinedeployment.ReasonNewSetAvailable)))
		writes.Reset()
		expect.Reconciled(ctx, r, md)
		Expect(writes.To(md.Name)).To(BeEmpty())

		By("a new template: a second set within maxSurge (1); the first keeps its 2 Machines")
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"large"}}}}}}`)))).To(Succeed())
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 2, "2": 1}))
		second := setsOf(md)["2"]

		By("until the second set has acted on its spec, no set is written")
		writes.Reset()
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 2, "2": 1}))
		Expect(writes.To(first.Name)).To(BeEmpty())
		Expect(writes.To(second.Name)).To(BeEmpty())

		By("its Machine is available: the first set gives one up (maxUnavailable 0: 3 available, 2 kept)")
		acted(second, 1, 1)
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 1, "2": 1}))
		writes.Reset()
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 1, "2": 1}), "not again before the first set acted")
		Expect(writes.To(first.Name)).To(BeEmpty())
		Expect(writes.To(second.Name)).To(BeEmpty())

		By("the first set has acted: the second grows to 2, then, once available, the first goes to 0")
		acted(first, 1, 1)
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 1, "2": 2}))
		acted(second, 2, 2)
		expect.Reconciled(ctx, r, md)
		Expect(replicasOf(md)).To(Equal(map[string]int32{"1": 0, "2": 2}))
		acted(first, 0, 0)
		expect.Reconciled(ctx, r, md)
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
		st := expect.Fetched(ctx, k8s, md).Status
		Expect([]int32{st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.UnavailableReplicas}).To(Equal([]int32{2, 2, 2, 0}))
	})

	It("misses its progress deadline progressDeadlineSeconds after the last progress, not a second before, and says so", func() {
		md := builder.MachineDeployment(ns, "stuck", 1).WithProgressDeadlineSeconds(60).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Expect(expect.Reconciled(ctx, r, md).RequeueAfter).To(Equal(61 * time.Second))
		set := setsOf(md)["1"]

		By("10s later the set has its Machine, never available: progress, the deadline starts again")
		clock.Step(10 * time.Second)
		acted(set, 1, 0)
		Expect(expect.Reconciled(ctx, r, md).RequeueAfter).To(Equal(61 * time.Second))
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonSetUpdated))

		By("60s after that progress: not past the deadline yet, and nothing to write")
		clock.Step(60 * time.Second)
		writes.Reset()
		Expect(expect.Reconciled(ctx, r, md).RequeueAfter).To(Equal(time.Second))
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonSetUpdated))
		Expect(writes.To(md.Name)).To(BeEmpty())
		Expect(events()).NotTo(ContainElement(ContainSubstring(machinedeployment.ReasonDeadlineExceeded)))

		By("one second more: False, with a Warning")
		clock.Step(time.Second)
		Expect(expect.Reconciled(ctx, r, md)).To(BeZero(), "no deadline runs while it is exceeded")
		Expect(progressing(md)).To(Equal("False/" + machinedeployment.ReasonDeadlineExceeded))
		Expect(events()).To(ContainElement(And(HavePrefix("Warning "+machinedeployment.ReasonDeadlineExceeded),
			ContainSubstring("no progress for 1m0s"))))

		By("the Machine becomes available: the rollout completes")
		acted(set, 1, 1)
		expect.Reconciled(ctx, r, md)
		Expect(progressing(md)).To(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
	})
})

// removeAll deletes the deployments and sets of ns at once, finalizers dropped: no controller runs
// to remove them.
func removeAll(ns string) {
	GinkgoHelper()
	for _, list := range []client.ObjectList{&v1beta1.MachineDeploymentList{}, &v1beta1.MachineSetList{}} {
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		items, err := meta.ExtractList(list)
		Expect(err).NotTo(HaveOccurred())
		for _, item := range items {
			obj := item.(client.Object)
			Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed())
		}
	}
}
