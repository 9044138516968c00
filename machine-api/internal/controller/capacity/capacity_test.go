package capacity_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/capacity"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/reconcile/write"
)

var _ = Describe("The cluster-autoscaler's capacity annotations", func() {
	const (
		cpu    = v1beta1.CapacityCPUAnnotation
		memory = v1beta1.CapacityMemoryAnnotation
		labels = v1beta1.CapacityLabelsAnnotation
		taints = v1beta1.CapacityTaintsAnnotation
	)
	var (
		ns    string
		class *v1beta1.MachineClass
		md    *v1beta1.MachineDeployment
		set   *v1beta1.MachineSet
	)
	BeforeEach(func() {
		ns = newNamespace()
		class = &v1beta1.MachineClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
			Spec: v1beta1.MachineClassSpec{
				ProviderSpec: runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)},
				NodeTemplate: &v1beta1.NodeTemplate{
					Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")},
					Labels:   map[string]string{"pool": "big"},
					Taints:   []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
				},
			},
		}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		md = builder.MachineDeployment(ns, "from-zero", 0).Build()
		md.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "big"}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		set = builder.MachineSet(ns, "standalone", 0).Build()
		set.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "big"}}
		Expect(k8s.Create(ctx, set)).To(Succeed())
	})

	setTemplate := func(nt string) {
		GinkgoHelper()
		Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"nodeTemplate":`+nt+`}}`)))).To(Succeed())
	}
	annotate := func(obj client.Object, key, value string) {
		GinkgoHelper()
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+key+`":"`+value+`"}}}`)))
		})).To(Succeed())
	}

	It("are written on every set and deployment of a class with a nodeTemplate, follow the class, and leave annotations set by hand alone", func() {
		full := map[string]string{cpu: "16", memory: "64Gi", labels: "pool=big", taints: "dedicated=batch:NoSchedule"}
		Eventually(capacityOf(md)).Should(Equal(full))
		Eventually(capacityOf(set)).Should(Equal(full))
		Eventually(func() []string {
			list := &eventsv1.EventList{}
			Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range list.Items {
				if e.Regarding.Name == md.Name {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElement(capacity.EventCapacityAnnotationsUpdated))

		By("a user sets the deployment's memory by hand; the class changes")
		annotate(md, memory, "100Gi")
		setTemplate(`{"capacity":{"cpu":"32","memory":"128Gi"},"labels":null,"taints":null}`)
		Eventually(capacityOf(set)).Should(Equal(map[string]string{cpu: "32", memory: "128Gi"}))
		Eventually(capacityOf(md)).Should(Equal(map[string]string{cpu: "32", memory: "100Gi"}), "the value set by hand stays")

		By("the class loses its nodeTemplate: the annotations written from it go, the one set by hand stays")
		setTemplate(`null`)
		Eventually(capacityOf(set)).Should(BeEmpty())
		Eventually(capacityOf(md)).Should(Equal(map[string]string{memory: "100Gi"}))
		Expect(capacityOf(md)()).To(Equal(map[string]string{memory: "100Gi"}))
	})

	It("are removed when a template stops using the class", func() {
		Eventually(capacityOf(set)).Should(HaveKeyWithValue(cpu, "16"))
		Expect(k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"machineClass":null,"value":{"instanceType":"small"}}}}}}`)))).To(Succeed())
		Eventually(capacityOf(set)).Should(BeEmpty())
		got := &v1beta1.MachineSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(set), got)).To(Succeed())
		Expect(got.Annotations).NotTo(HaveKey(v1beta1.CapacityAnnotationsAnnotation), "nor a record")
	})
})

// The reconcile-once level: a write computed from a copy older than the stored object (a cache
// that has not caught up) meets an optimistic-lock conflict, which is retried soon, without an
// error (and so without an error log or stack trace), and never overwrites what was written
// meanwhile.
var _ = Describe("Writing the capacity annotations from a stale copy", func() {
	It("retries after the conflict without an error, and keeps the annotation set meanwhile", func() {
		ns := newNamespace()
		class := &v1beta1.MachineClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
			Spec: v1beta1.MachineClassSpec{
				ProviderSpec: runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)},
				NodeTemplate: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}},
			},
		}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		// Paused, so the running manager leaves it to this test's reconciler.
		set := builder.MachineSet(ns, "stale", 0).WithAnnotations(map[string]string{v1beta1.PausedAnnotation: ""}).Build()
		set.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "big"}}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		stale := set.DeepCopy()
		delete(stale.Annotations, v1beta1.PausedAnnotation)
		// Meanwhile a user sets the CPU by hand (and unpauses).
		Expect(k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType, []byte(
			`{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":null,"`+v1beta1.CapacityCPUAnnotation+`":"8"}}}`)))).To(Succeed())

		r := capacity.ForMachineSets(&staleSet{Client: k8s, stale: stale}, events.NewFakeRecorder(10))
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(set)})
		Expect(err).NotTo(HaveOccurred(), "a conflict is expected, not an error")
		Expect(res.RequeueAfter).To(Equal(write.ConflictRetry), "retried soon")
		Expect(capacityOf(set)()).To(Equal(map[string]string{v1beta1.CapacityCPUAnnotation: "8"}), "the value set meanwhile stays")
	})
})

// capacityOf returns the capacity annotations of obj (the record left out).
func capacityOf(obj client.Object) func() map[string]string {
	return func() map[string]string {
		got := obj.DeepCopyObject().(client.Object)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		out := map[string]string{}
		for k, v := range got.GetAnnotations() {
			if strings.HasPrefix(k, "capacity.cluster-autoscaler.kubernetes.io/") {
				out[k] = v
			}
		}
		return out
	}
}

// staleSet is a client whose Get of one MachineSet returns stale, as a cache that has not caught
// up would.
type staleSet struct {
	client.Client
	stale *v1beta1.MachineSet
}

func (s *staleSet) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if set, ok := obj.(*v1beta1.MachineSet); ok && key == client.ObjectKeyFromObject(s.stale) {
		s.stale.DeepCopyInto(set)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}
