package nodelink_test

import (
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// nodeVersions records every version of the Node named name the API server stores, from a watch
// started now: what a scheduler could have seen.
func nodeVersions(name string) func() []corev1.Node {
	GinkgoHelper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: envtest.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": name})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var (
		mu   sync.Mutex
		seen []corev1.Node
	)
	go func() {
		for e := range w.ResultChan() {
			if n, ok := e.Object.(*corev1.Node); ok && (e.Type == watch.Added || e.Type == watch.Modified) {
				mu.Lock()
				seen = append(seen, *n.DeepCopy())
				mu.Unlock()
			}
		}
	}()
	return func() []corev1.Node {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func hasTaint(n corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

var _ = Describe("The initialization taint", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("keeps a Node gated until the patch that gives it the Machine's labels and taints, which removes it", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		versions := nodeVersions(node)
		create(builder.Node(node).WithProviderID(id).WithTaint(nodelink.DefaultInitializationTaintKey, "", corev1.TaintEffectNoSchedule).Build())
		Eventually(versions).Should(HaveLen(1))
		Consistently(func() bool { return hasTaint(versions()[len(versions())-1], nodelink.DefaultInitializationTaintKey) }, "1s").
			Should(BeTrue(), "no Machine yet: the Node stays gated")

		create(builder.Machine(ns, name).WithProviderID(id).WithNodeLabel("node-role.kubernetes.io/db", "").
			WithTaint("dedicated", "db", corev1.TaintEffectNoSchedule).Build())
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
		Eventually(func() bool { return hasTaint(versions()[len(versions())-1], nodelink.DefaultInitializationTaintKey) }).Should(BeFalse())

		for _, v := range versions() {
			gated := hasTaint(v, nodelink.DefaultInitializationTaintKey)
			_, role := v.Labels["node-role.kubernetes.io/db"]
			Expect(gated).NotTo(Equal(role && hasTaint(v, "dedicated")),
				"Node version %s: gated %t, with the Machine's label %t and taint %t; the gate must go exactly when they come", v.ResourceVersion, gated, role, hasTaint(v, "dedicated"))
		}
	})

	It("is not taken off a Node whose Machine is paused, and goes once it is unpaused", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		m := builder.Machine(ns, name).WithProviderID(id).Build()
		m.Annotations = map[string]string{pausedAnnotation: ""}
		create(m)
		create(builder.Node(node).WithProviderID(id).WithTaint(nodelink.DefaultInitializationTaintKey, "", corev1.TaintEffectNoSchedule).Build())
		Consistently(getNode(node)).Should(HaveField("Spec.Taints", ContainElement(HaveField("Key", nodelink.DefaultInitializationTaintKey))))

		Eventually(func() error {
			var m testmachine.Machine
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m); err != nil {
				return err
			}
			delete(m.Annotations, pausedAnnotation)
			return k8sClient.Update(ctx, &m)
		}).Should(Succeed())
		Eventually(getNode(node)).Should(HaveField("Spec.Taints", Not(ContainElement(HaveField("Key", nodelink.DefaultInitializationTaintKey)))))
		Consistently(getNode(node)).Should(HaveField("Spec.Taints", Not(ContainElement(HaveField("Key", nodelink.DefaultInitializationTaintKey)))))
	})
})
