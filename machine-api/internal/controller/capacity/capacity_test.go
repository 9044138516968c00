package capacity_test

import (
	"context"
	"encoding/json"
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

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/capacity"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
)

const (
	cpu      = v1beta1.CapacityCPUAnnotation
	memory   = v1beta1.CapacityMemoryAnnotation
	labels   = v1beta1.CapacityLabelsAnnotation
	taints   = v1beta1.CapacityTaintsAnnotation
	gpuType  = v1beta1.CapacityGPUTypeAnnotation
	gpuCount = v1beta1.CapacityGPUCountAnnotation
	// record is where versions before server-side apply recorded what they wrote.
	record = v1beta1.Prefix + "capacity-annotations"
	// byHand is the field manager of the test's edits "by hand", as kubectl annotate's would be.
	byHand = "kubectl-annotate"
)

var _ = Describe("The cluster-autoscaler's capacity annotations", func() {
	var (
		ns    string
		class *v1beta1.MachineClass
		md    *v1beta1.MachineDeployment
		set   *v1beta1.MachineSet
	)
	BeforeEach(func() {
		ns = newNamespace()
		class = bigClass(ns, &v1beta1.NodeTemplate{
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")},
			Labels:   map[string]string{"pool": "big"},
			Taints:   []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
		})
		md = builder.MachineDeployment(ns, "from-zero", 0).WithMachineClass(class.Name).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		set = builder.MachineSet(ns, "standalone", 0).Build()
		set.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: class.Name}}
		Expect(k8s.Create(ctx, set)).To(Succeed())
	})

	setTemplate := func(nt string) {
		GinkgoHelper()
		Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"nodeTemplate":`+nt+`}}`)))).To(Succeed())
	}

	It("are written on every set and deployment of a class with a nodeTemplate, follow the class, and leave annotations set by hand alone, saying so", func() {
		full := map[string]string{cpu: "16", memory: "64Gi", labels: "pool=big", taints: "dedicated=batch:NoSchedule"}
		Eventually(capacityOf(md)).Should(Equal(full))
		Eventually(capacityOf(set)).Should(Equal(full))
		Eventually(eventNotes(md)).Should(ContainElement(HavePrefix("set " + cpu + "=16")))

		By("a user sets the deployment's memory by hand; the class changes")
		annotate(md, map[string]any{memory: "100Gi"})
		setTemplate(`{"capacity":{"cpu":"32","memory":"128Gi"},"labels":null,"taints":null}`)
		Eventually(capacityOf(set)).Should(Equal(map[string]string{cpu: "32", memory: "128Gi"}))
		Eventually(capacityOf(md)).Should(Equal(map[string]string{cpu: "32", memory: "100Gi"}), "the value set by hand stays")
		Eventually(eventNotes(md)).Should(ContainElement(And(ContainSubstring(cpu+"=32"),
			HaveSuffix(`left alone: `+memory+`=100Gi (set by "`+byHand+`")`))), "the event says which value was left alone, and whose it is")

		By("the class loses its nodeTemplate: the annotations written from it go, the one set by hand stays")
		setTemplate(`null`)
		Eventually(capacityOf(set)).Should(BeEmpty())
		Eventually(capacityOf(md)).Should(Equal(map[string]string{memory: "100Gi"}))

		By("the user deletes the memory annotation, handing it back: the class's value is written at once")
		setTemplate(`{"capacity":{"memory":"256Gi"}}`)
		Eventually(capacityOf(set)).Should(Equal(map[string]string{memory: "256Gi"}))
		Expect(capacityOf(md)()).To(Equal(map[string]string{memory: "100Gi"}))
		annotate(md, map[string]any{memory: nil})
		Eventually(capacityOf(md)).Should(Equal(map[string]string{memory: "256Gi"}))
	})

	It("are removed when a template stops using the class, or the class is deleted", func() {
		Eventually(capacityOf(set)).Should(HaveKeyWithValue(cpu, "16"))
		Eventually(capacityOf(md)).Should(HaveKeyWithValue(cpu, "16"))
		Expect(k8s.Patch(ctx, set, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"machineClass":null,"value":{"instanceType":"small"}}}}}}`)))).To(Succeed())
		Eventually(capacityOf(set)).Should(BeEmpty())

		Expect(k8s.Delete(ctx, class)).To(Succeed())
		Eventually(capacityOf(md)).Should(BeEmpty())
	})

	It("take over, once, what an earlier version recorded as its own, and leave the rest alone", func() {
		// An earlier version wrote cpu 8 and a GPU for an older nodeTemplate, with a merge patch and
		// its record; since then a user changed the memory and set taints by hand.
		old := builder.MachineDeployment(ns, "upgraded", 0).WithMachineClass(class.Name).WithAnnotations(map[string]string{
			cpu: "8", memory: "100Gi", gpuType: "nvidia.com/gpu", gpuCount: "1", taints: "spot:NoSchedule",
			record: recordOf(map[string]string{cpu: "8", memory: "64Gi", gpuType: "nvidia.com/gpu", gpuCount: "1"}),
		}).Build()
		Expect(k8s.Create(ctx, old)).To(Succeed())

		Eventually(capacityOf(old)).Should(Equal(map[string]string{
			cpu: "16", labels: "pool=big", // ours: updated, and added
			memory: "100Gi", taints: "spot:NoSchedule", // set by hand: left alone
		}), "the recorded GPU, no longer wanted, goes")
		Expect(annotationsOf(old)).NotTo(HaveKey(record), "the record goes")
		Expect(ownersOf(old, cpu)).To(ConsistOf(capacity.FieldOwner), "the controller alone owns what it took over")

		By("the class changes: what was taken over follows it, what was set by hand does not")
		setTemplate(`{"capacity":{"cpu":"24","memory":"64Gi"}}`)
		Eventually(capacityOf(old)).Should(Equal(map[string]string{cpu: "24", labels: "pool=big", memory: "100Gi", taints: "spot:NoSchedule"}))
	})
})

// The reconcile-once level: the test's own reconciler, a client straight to the API server that
// counts the applies, and no manager acting on the set (it is paused; the reconciler's client reads
// it unpaused).
var _ = Describe("Applying the capacity annotations, one reconcile at a time", func() {
	It("never overwrites a value set by hand, even from a stale copy, writes once, and nothing when nothing changed", func() {
		ns := newNamespace()
		bigClass(ns, &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}})
		set := builder.MachineSet(ns, "once", 0).WithAnnotations(map[string]string{v1beta1.PausedAnnotation: ""}).Build()
		set.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "big"}}
		Expect(k8s.Create(ctx, set)).To(Succeed())
		c := &unpaused{Client: k8s, stale: set.DeepCopy()}
		// Meanwhile a user sets the CPU by hand; the reconciler's copy does not show it.
		annotate(set, map[string]any{cpu: "8"})
		rec := events.NewFakeRecorder(10)
		r := capacity.ForMachineSets(c, rec)

		before := expect.Fetched(ctx, k8s, &v1beta1.MachineSet{ObjectMeta: set.ObjectMeta}).ResourceVersion
		Expect(expect.Reconciled(ctx, r, set)).To(BeZero(), "nothing to wait for")
		Expect(capacityOf(set)()).To(Equal(map[string]string{cpu: "8", memory: "64Gi"}), "the value set by hand stays")
		Expect(rec.Events).To(Receive(HaveSuffix(`left alone: ` + cpu + `=8 (set by "` + byHand + `")`)))
		Expect(c.applies).To(Equal(2), "one apply refused on the CPU, one without it")
		written := expect.Fetched(ctx, k8s, &v1beta1.MachineSet{ObjectMeta: set.ObjectMeta}).ResourceVersion
		Expect(written).NotTo(Equal(before), "the memory is written")

		By("again, with an up-to-date copy: no write, no event")
		c.stale, c.applies = nil, 0
		Expect(expect.Reconciled(ctx, r, set)).To(BeZero())
		Expect(c.applies).To(Equal(2), "the API server is asked (only it knows the CPU is the user's)")
		Expect(expect.Fetched(ctx, k8s, &v1beta1.MachineSet{ObjectMeta: set.ObjectMeta}).ResourceVersion).To(Equal(written), "nothing written")
		Expect(rec.Events).NotTo(Receive())

		By("the class gives the CPU the user's value: nothing to do, not even a request")
		Expect(k8s.Patch(ctx, &v1beta1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"nodeTemplate":{"capacity":{"cpu":"8"}}}}`)))).To(Succeed())
		c.applies = 0
		Expect(expect.Reconciled(ctx, r, set)).To(BeZero())
		Expect(c.applies).To(BeZero())
	})
})

// bigClass creates the MachineClass "big" with nodeTemplate nt.
func bigClass(ns string, nt *v1beta1.NodeTemplate) *v1beta1.MachineClass {
	GinkgoHelper()
	class := &v1beta1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
		Spec: v1beta1.MachineClassSpec{
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"instanceType":"small"}`)},
			NodeTemplate: nt,
		},
	}
	Expect(k8s.Create(ctx, class)).To(Succeed())
	return class
}

// annotate sets (a string) or removes (nil) annotations of obj by hand: a merge patch under the
// field manager byHand.
func annotate(obj client.Object, annotations map[string]any) {
	GinkgoHelper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	Expect(err).NotTo(HaveOccurred())
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return k8s.Patch(ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, body), client.FieldOwner(byHand))
	})).To(Succeed())
}

func recordOf(written map[string]string) string {
	data, err := json.Marshal(written)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

// annotationsOf returns obj's annotations as stored.
func annotationsOf(obj client.Object) map[string]string {
	GinkgoHelper()
	got := obj.DeepCopyObject().(client.Object)
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	return got.GetAnnotations()
}

// capacityOf returns the capacity annotations of obj.
func capacityOf(obj client.Object) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for k, v := range annotationsOf(obj) {
			if strings.HasPrefix(k, "capacity.cluster-autoscaler.kubernetes.io/") {
				out[k] = v
			}
		}
		return out
	}
}

// ownersOf returns the field managers that own obj's annotation key, as the API server records them.
func ownersOf(obj client.Object, key string) []string {
	GinkgoHelper()
	got := obj.DeepCopyObject().(client.Object)
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
	var owners []string
	for _, e := range got.GetManagedFields() {
		if e.FieldsV1 != nil && strings.Contains(e.FieldsV1.GetRawString(), `"f:`+key+`"`) {
			owners = append(owners, e.Manager)
		}
	}
	return owners
}

// eventNotes returns the notes of the capacity events on obj.
func eventNotes(obj client.Object) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == obj.GetName() && e.Reason == capacity.EventCapacityAnnotationsUpdated {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}
}

// unpaused is a client that reads MachineSets without their pause annotation (a copy as stale as
// stale when it is set, as a cache that has not caught up would return), and counts the applies.
type unpaused struct {
	client.Client
	stale   *v1beta1.MachineSet
	applies int
}

func (u *unpaused) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	set, ok := obj.(*v1beta1.MachineSet)
	if !ok {
		return u.Client.Get(ctx, key, obj, opts...)
	}
	if u.stale != nil {
		u.stale.DeepCopyInto(set)
	} else if err := u.Client.Get(ctx, key, set, opts...); err != nil {
		return err
	}
	delete(set.Annotations, v1beta1.PausedAnnotation)
	return nil
}

func (u *unpaused) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	u.applies++
	return u.Client.Apply(ctx, ac, opts...)
}
