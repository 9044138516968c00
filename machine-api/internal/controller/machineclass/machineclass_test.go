package machineclass_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineclass"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
)

var _ = Describe("A MachineClass", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("is kept while a Machine uses it, says by whom when deleted, and goes once the Machine is gone", func() {
		class := builder.MachineClass(ns, "big", "large")
		Expect(k8s.Create(ctx, class)).To(Succeed())
		m := builder.Machine(ns, "web-0").WithMachineClass(class.Name).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(finalizersOf(class)).Should(ConsistOf(v1beta1.MachineClassFinalizer))

		Expect(k8s.Delete(ctx, class)).To(Succeed())
		Eventually(warnings(class)).Should(ContainElement(
			"MachineClass is still used by 1 machine(s) (web-0); it is deleted once none refers to it"))
		Expect(finalizersOf(class)()).To(ConsistOf(v1beta1.MachineClassFinalizer), "the class waits for its Machine")

		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(gone(class)).Should(BeTrue(), "the class goes once no Machine uses it")
	})

	It("is released when its last Machine moves to another class, and is then deleted at once", func() {
		small := builder.MachineClass(ns, "small", "small")
		Expect(k8s.Create(ctx, small)).To(Succeed())
		big := builder.MachineClass(ns, "big", "large")
		Expect(k8s.Create(ctx, big)).To(Succeed())
		m := builder.Machine(ns, "web-0").WithMachineClass(small.Name).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(finalizersOf(small)).Should(ConsistOf(v1beta1.MachineClassFinalizer))
		Expect(finalizersOf(big)()).To(BeEmpty(), "a class nobody uses has no finalizer")

		Expect(k8s.Patch(ctx, m, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"providerSpec":{"machineClass":{"name":"big"}}}}`)))).To(Succeed())
		Eventually(finalizersOf(big)).Should(ConsistOf(v1beta1.MachineClassFinalizer))
		Eventually(finalizersOf(small)).Should(BeEmpty())

		Expect(k8s.Delete(ctx, small)).To(Succeed())
		Expect(gone(small)()).To(BeTrue(), "nothing holds an unused class")
	})

	It("counts every Machine using it and names the first five, by name", func() {
		class := builder.MachineClass(ns, "big", "large")
		Expect(k8s.Create(ctx, class)).To(Succeed())
		// Paused: no instance is needed to use a class, and the machine controller leaves them
		// alone, so that they are deleted at once at the end.
		for i := range 7 {
			m := builder.Machine(ns, fmt.Sprintf("m-%d", i)).WithMachineClass(class.Name).
				WithAnnotations(map[string]string{v1beta1.PausedAnnotation: ""}).Build()
			Expect(k8s.Create(ctx, m)).To(Succeed())
		}
		Eventually(finalizersOf(class)).Should(ConsistOf(v1beta1.MachineClassFinalizer))
		Expect(k8s.Delete(ctx, class)).To(Succeed())
		Eventually(warnings(class)).Should(ContainElement(
			"MachineClass is still used by 7 machine(s) (m-0, m-1, m-2, m-3, m-4 and 2 more); it is deleted once none refers to it"))

		Expect(k8s.DeleteAllOf(ctx, &v1beta1.Machine{}, client.InNamespace(ns))).To(Succeed())
		Eventually(gone(class)).Should(BeTrue())
	})
})

// The reconcile-once level: the test's own reconciler with a client straight to the API server.
var _ = Describe("A paused MachineClass", func() {
	It("is left alone: no finalizer while it is paused", func() {
		ns := newNamespace()
		class := builder.MachineClass(ns, "big", "large")
		class.Annotations = map[string]string{v1beta1.PausedAnnotation: ""}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		m := builder.Machine(ns, "web-0").WithMachineClass(class.Name).
			WithAnnotations(map[string]string{v1beta1.PausedAnnotation: ""}).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())

		r := &machineclass.Reconciler{Client: k8s, Recorder: events.NewFakeRecorder(10)}
		Expect(expect.Reconciled(ctx, r, class)).To(BeZero())
		Expect(expect.Fetched(ctx, k8s, class).Finalizers).To(BeEmpty())

		By("unpaused, the running manager protects it")
		Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+v1beta1.PausedAnnotation+`":null}}}`)))).To(Succeed())
		Eventually(finalizersOf(class)).Should(ConsistOf(v1beta1.MachineClassFinalizer))
	})
})

func finalizersOf(class *v1beta1.MachineClass) func() []string {
	return func() []string {
		got := &v1beta1.MachineClass{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(class), got)).To(Succeed())
		return got.Finalizers
	}
}

func gone(obj client.Object) func() bool {
	return func() bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if err != nil && !apierrors.IsNotFound(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		return apierrors.IsNotFound(err)
	}
}

// warnings returns the notes of the Warning events on class.
func warnings(class *v1beta1.MachineClass) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(class.Namespace))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == class.Name && e.Regarding.Kind == "MachineClass" && e.Type == "Warning" {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}
}
