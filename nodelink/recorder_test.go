package nodelink_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// testRecorder plays the controller that records the links in its own status writes: each
// LinkChanged queues the machine, and its reconcile asks the linker for the link and applies it
// under its own field manager, as machine-api's machine controller does with the rest of a
// Machine's status.
type testRecorder struct {
	queue  chan types.NamespacedName
	linker *nodelink.Linker[*testmachine.Machine]
}

const recorderManager = "test-recorder"

func (t *testRecorder) LinkChanged(key types.NamespacedName) {
	select {
	case t.queue <- key:
	default: // must not block; a test that overflows 1000 requests fails on what it waits for
	}
}

func (t *testRecorder) run(ctx context.Context) {
	defer GinkgoRecover()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-t.queue:
			var m testmachine.Machine
			if err := k8sClient.Get(ctx, key, &m); err != nil {
				continue
			}
			link, err := t.linker.Link(ctx, &m)
			if err != nil || link == nil {
				continue
			}
			ac := testmachine.ApplyAdapter{}.LinkApplyConfiguration(&m, link.NodeRef, link.Condition)
			if err := k8sClient.Status().Apply(ctx, ac, client.FieldOwner(recorderManager), client.ForceOwnership); err != nil {
				t.LinkChanged(key) // retry
				continue
			}
			t.linker.Recorded(&m, link)
		}
	}
}

var _ = Describe("Handing the links over to a LinkRecorder", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		rec := &testRecorder{queue: make(chan types.NamespacedName, 1000)}
		l, err := nodelink.NewLinker(ctx, mgr, mgr, testmachine.ApplyAdapter{}, nodelink.Options{
			Name:     "nodelink-recorded",
			Selector: labels.SelectorFromSet(labels.Set{clusterNameLabel: "recorded"}),
			Recorder: rec,
		})
		Expect(err).NotTo(HaveOccurred())
		rec.linker = l
		lctx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		go rec.run(lctx)
		go func() {
			defer GinkgoRecover()
			Expect(l.Start(lctx)).To(Succeed())
		}()
	})

	recorded := func(name string) *testmachine.Machine {
		return builder.Machine(ns, name).WithLabel(clusterNameLabel, "recorded").Build()
	}

	It("claims the Node and lets the recorder write the link on the machine, which the linker never writes", func() {
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		m := recorded(name)
		m.Spec.ProviderID = &id
		create(m)
		create(builder.Node(node).WithProviderID(id).Build())

		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
		Expect(getNode(node)(Default).Annotations).To(HaveKeyWithValue(annMachine, name), "the linker claimed the Node")
		var got testmachine.Machine
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &got)).To(Succeed())
		var managers []string
		for _, f := range got.ManagedFields {
			if f.Subresource == "status" {
				managers = append(managers, f.Manager)
			}
		}
		Expect(managers).To(ConsistOf(recorderManager), "only the recorder wrote the machine's status")
	})

	It("emits the linker's events once the recorder has written the link", func() {
		name, id := unique("m"), "sim:///"+unique("i")
		// Both Nodes before the machine: with the machine first, the linker may link it to the
		// first Node before the second exists (and a link is kept).
		create(builder.Node(unique("node")).WithProviderID(id).Build())
		create(builder.Node(unique("node")).WithProviderID(id).Build())
		m := recorded(name)
		m.Spec.ProviderID = &id
		create(m)

		Eventually(getMachine(ns, name)).Should(And(
			HaveField("NodeRef", ""), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", nodelink.ReasonMultipleNodesMatch)))
		Eventually(eventReasons(ns, name)).Should(ContainElement(nodelink.ReasonMultipleNodesMatch))
	})
})
