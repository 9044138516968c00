package machineset_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/autoscaler"
	"machineapi.dev/machine-api/internal/controller/machineset"
	"machineapi.dev/machine-api/internal/test/builder"
)

var _ = Describe("A MachineSet", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("scales 0 -> 5 -> 2, deleting the annotated Machine first, then the oldest", func() {
		set := builder.MachineSet(ns, "pool", 0).WithDeletePolicy(v1beta1.OldestDeletePolicy).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(condition(set, v1beta1.ScalingUpCondition)).Should(Equal("False/" + machineset.ReasonNotScalingUp))
		Expect(machinesOf(set)).To(BeEmpty())

		patchReplicas(set, 5)
		Eventually(readyReplicas(set)).Should(Equal(int32(5)))
		machines := machinesOf(set)
		Expect(machines).To(HaveLen(5))
		for _, m := range machines {
			Expect(m.Finalizers).To(ContainElement(v1beta1.MachineFinalizer), "created with the finalizer")
			Expect(m.Labels).To(HaveKeyWithValue(v1beta1.SetNameLabel, "pool"))
			Expect(m.Labels).To(HaveKeyWithValue(builder.PoolLabel, "pool"))
			Expect(m.Name).To(MatchRegexp(`^pool-[a-z0-9]{5}$`))
		}

		// Annotate a Machine in the middle of the Oldest order: it goes first all the same.
		order := oldestFirst(machines)
		marked := order[2].Name
		patch(&order[2], `{"metadata":{"annotations":{"`+v1beta1.DeleteMachineAnnotation+`":"yes"}}}`)
		var rest []v1beta1.Machine
		for _, m := range order {
			if m.Name != marked {
				rest = append(rest, m)
			}
		}
		want := names(rest[2:]) // the two oldest unmarked ones go too

		patchReplicas(set, 2)
		Eventually(liveNames(set)).Should(Equal(want))
		Consistently(liveNames(set), "2s").Should(Equal(want), "exactly three are deleted")
		Eventually(func() int { return len(machinesOf(set)) }).Should(Equal(2), "the deleted Machines finish deleting")
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		Expect(getSet(set).Status.Replicas).To(Equal(int32(2)))
		Expect(getSet(set).Status.Selector).To(Equal(builder.PoolLabel + "=pool"))
	})

	It("adopts orphans that match its selector and releases Machines that stop matching", func() {
		for _, name := range []string{"orphan-a", "orphan-b"} {
			Expect(k8s.Create(ctx, builder.Machine(ns, name).WithLabels(map[string]string{builder.PoolLabel: "pool"}).Build())).To(Succeed())
		}
		Expect(k8s.Create(ctx, builder.Machine(ns, "stranger").WithLabels(map[string]string{builder.PoolLabel: "other"}).Build())).To(Succeed())
		set := builder.MachineSet(ns, "pool", 3).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		set = getSet(set)

		Eventually(readyReplicas(set)).Should(Equal(int32(3)))
		got := liveNames(set)()
		Expect(got).To(HaveLen(3))
		Expect(got).To(ContainElements("orphan-a", "orphan-b"), "the orphans are adopted and only one Machine is created")
		Expect(got).NotTo(ContainElement("stranger"))

		// A label change takes orphan-a out of the set: it is released (kept, not deleted) and replaced.
		m := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphan-a"}, m)).To(Succeed())
		patch(m, `{"metadata":{"labels":{"`+builder.PoolLabel+`":"elsewhere"}}}`)
		Eventually(liveNames(set)).ShouldNot(ContainElement("orphan-a"))
		Eventually(func() []string { return liveNames(set)() }).Should(HaveLen(3))
		Eventually(readyReplicas(set)).Should(Equal(int32(3)))
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphan-a"}, m)).To(Succeed())
		Expect(m.DeletionTimestamp.IsZero()).To(BeTrue(), "a released Machine is not deleted")
		Expect(metav1.GetControllerOf(m)).To(BeNil())
		Expect(m.Labels).NotTo(HaveKey(v1beta1.SetNameLabel))
		Eventually(eventReasons(set)).Should(ContainElements(machineset.EventAdopted, machineset.EventReleased), "events are written asynchronously")
	})

	It("updates the labels, annotations, node labels and taints of its Machines in place, removing dropped keys", func() {
		set := builder.MachineSet(ns, "pool", 2).
			WithTemplateLabels(map[string]string{"tier": "a"}).
			WithTemplateAnnotations(map[string]string{"example.com/note": "one"}).
			WithNodeLabels(map[string]string{"example.com/role": "web"}).
			Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		before := liveNames(set)()
		// Someone else's label on a Machine is left alone.
		m := machinesOf(set)[0]
		patch(&m, `{"metadata":{"labels":{"owner":"me"}}}`)

		Expect(k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"template":{
			"metadata":{"labels":{"tier":null,"zone":"z1"},"annotations":{"example.com/note":"two"}},
			"spec":{"metadata":{"labels":{"example.com/role":null,"example.com/team":"blue"}},
			        "taints":[{"key":"dedicated","value":"blue","effect":"NoSchedule"}]}}}}`)))).To(Succeed())

		Eventually(func(g Gomega) {
			for _, m := range machinesOf(set) {
				g.Expect(m.Labels).To(HaveKeyWithValue("zone", "z1"))
				g.Expect(m.Labels).NotTo(HaveKey("tier"))
				g.Expect(m.Annotations).To(HaveKeyWithValue("example.com/note", "two"))
				g.Expect(m.Spec.Metadata.Labels).To(Equal(map[string]string{"example.com/team": "blue"}))
				g.Expect(m.Spec.Taints).To(HaveLen(1))
				g.Expect(nodeLabel(ns, m.Name, "example.com/team")).To(Equal("blue"))
				g.Expect(nodeLabel(ns, m.Name, "example.com/role")).To(Equal("<unset>"))
			}
		}).Should(Succeed())
		Expect(liveNames(set)()).To(Equal(before), "no Machine was replaced")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&m), &m)).To(Succeed())
		Expect(m.Labels).To(HaveKeyWithValue("owner", "me"))
	})

	It("puts back what someone changed on a Machine it had found in line with its template", func() {
		set := builder.MachineSet(ns, "pool", 2).
			WithTemplateLabels(map[string]string{"tier": "a"}).
			WithNodeLabels(map[string]string{"example.com/role": "web"}).
			Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		// The set has reconciled its Running Machines, finding them in line, more than once.
		m := machinesOf(set)[0]
		patch(&m, `{"metadata":{"labels":{"tier":"b"}},"spec":{"metadata":{"labels":{"example.com/role":"db"}}}}`)

		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&m), &m)).To(Succeed())
			g.Expect(m.Labels).To(HaveKeyWithValue("tier", "a"))
			g.Expect(m.Spec.Metadata.Labels).To(HaveKeyWithValue("example.com/role", "web"))
		}).Should(Succeed())
	})

	It("counts a Machine available once it has been Ready for minReadySeconds, with no other event to wake it", func() {
		set := builder.MachineSet(ns, "settle", 1).WithMinReadySeconds(5).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		var ready *v1beta1.MachineSet
		Eventually(func() int32 { ready = getSet(set); return ready.Status.ReadyReplicas }).Should(Equal(int32(1)))
		Expect(ready.Status.AvailableReplicas).To(BeZero(), "not available before minReadySeconds")

		Eventually(func() int32 { return getSet(set).Status.AvailableReplicas }).Should(Equal(int32(1)))
		m := machinesOf(set)[0]
		readyCond := meta.FindStatusCondition(m.Status.Conditions, v1beta1.ReadyCondition)
		Expect(readyCond).NotTo(BeNil(), "the available Machine has a Ready condition")
		Expect(time.Since(readyCond.LastTransitionTime.Time)).To(BeNumerically(">=", 5*time.Second), "available only after minReadySeconds")
	})

	It("deletes its Machines before it goes away", func() {
		set := builder.MachineSet(ns, "pool", 3).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(3)))
		Expect(getSet(set).Finalizers).To(ContainElement(v1beta1.MachineSetFinalizer))
		Expect(k8s.Delete(ctx, set)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(set), &v1beta1.MachineSet{}))
		}).Should(BeTrue())
		list := &v1beta1.MachineList{}
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
	})

	It("scales through the scale subresource, like kubectl scale and a merge patch of the scale object", func() {
		set := builder.MachineSet(ns, "pool", 1).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(func() string { return getSet(set).Status.Selector }).ShouldNot(BeEmpty())
		gr := schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "machinesets"}
		sc := scales(ns)
		// kubectl scale: read the scale object, update it, again on a conflict.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := sc.Get(ctx, gr, "pool", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = 3
			_, err = sc.Update(ctx, gr, s, metav1.UpdateOptions{})
			return err
		})).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(3)))

		_, err := sc.Patch(ctx, v1beta1.GroupVersion.WithResource("machinesets"), "pool", types.MergePatchType,
			[]byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(liveNames(set)).Should(HaveLen(1))
		Eventually(func() int32 {
			s, err := sc.Get(ctx, gr, "pool", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return s.Status.Replicas
		}).Should(Equal(int32(1)))
	})

	It("reports replicas outside the autoscaler's bounds without overruling them", func() {
		set := builder.MachineSet(ns, "pool", 3).WithAnnotations(map[string]string{
			v1beta1.AutoscalerMinSizeAnnotation: "1", v1beta1.AutoscalerMaxSizeAnnotation: "2",
		}).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(condition(set, v1beta1.AutoscalerBoundsCondition)).Should(Equal("False/" + autoscaler.ReasonAboveMaxSize))
		Eventually(readyReplicas(set)).Should(Equal(int32(3)), "spec.replicas is honoured")
		Eventually(eventReasons(set)).Should(ContainElement(autoscaler.ReasonAboveMaxSize))
		patchReplicas(set, 2)
		Eventually(condition(set, v1beta1.AutoscalerBoundsCondition)).Should(Equal("True/" + autoscaler.ReasonWithinAutoscalerBounds))
	})

	DescribeTable("leaves a set paused by an annotation alone, and resumes once it is removed", func(annotation string) {
		set := builder.MachineSet(ns, "pool", 2).WithAnnotations(map[string]string{annotation: ""}).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Consistently(liveNames(set), "3s").Should(BeEmpty(), "no Machine while paused")
		Expect(getSet(set).Finalizers).To(BeEmpty())

		patch(set, `{"metadata":{"annotations":{"`+annotation+`":null}}}`)
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
	},
		Entry("machine.machineapi.dev/paused", v1beta1.PausedAnnotation),
		Entry("cluster.x-k8s.io/paused, which the cluster-autoscaler honours too", v1beta1.ClusterAPIPausedAnnotation),
	)

	It("freezes when another writer gives it more Machines than replicas plus surge, and deletes the excess", func() {
		set := builder.MachineSet(ns, "pool", 2).Build()
		Expect(k8s.Create(ctx, set)).To(Succeed())
		Eventually(readyReplicas(set)).Should(Equal(int32(2)))
		set = getSet(set)
		for _, name := range []string{"extra-1", "extra-2", "extra-3"} {
			m := builder.Machine(ns, name).WithLabels(map[string]string{builder.PoolLabel: "pool"}).Build()
			m.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, v1beta1.GroupVersion.WithKind("MachineSet"))}
			Expect(k8s.Create(ctx, m)).To(Succeed())
		}
		Eventually(eventReasons(set)).Should(ContainElement(machineset.ReasonTooManyMachines))
		Eventually(liveNames(set)).Should(HaveLen(2))
		Eventually(condition(set, v1beta1.FrozenCondition)).Should(Equal("False/" + machineset.ReasonWithinBounds))
		Consistently(liveNames(set), "1s").Should(HaveLen(2))
	})
})

func patchReplicas(set *v1beta1.MachineSet, n int32) {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
	Expect(k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType, b))).To(Succeed())
}

func patch(obj client.Object, body string) {
	Expect(k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(body)))).To(Succeed())
}

// scales returns the client kubectl scale and the cluster-autoscaler use.
func scales(ns string) scale.ScaleInterface {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sc, err := scale.NewForConfig(env.Config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	Expect(err).NotTo(HaveOccurred())
	return sc.Scales(ns)
}
