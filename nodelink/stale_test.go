package nodelink_test

import (
	"context"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/builder"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// A kubelet writes its Node's status at any time. When that write lands between the linker's read
// of the Node and its patch, the patch is refused (optimistic lock), and the status write's own
// event changes nothing the linker reads. The machine must still be linked.
var _ = Describe("Linking while a kubelet writes the Node's status", func() {
	It("links the Machine after its Node patch lost to a status write", func() {
		ns := newNamespace()
		name, node, id := unique("m"), unique("node"), "sim:///"+unique("i")
		create(builder.Node(node).WithProviderID(id).Build())
		kubelet, err := client.New(env.Config, client.Options{Scheme: envtest.Scheme()})
		Expect(err).NotTo(HaveOccurred())

		// The Node side of this linker writes a status update of the Node just before the
		// linker's first patch of it, as a kubelet racing with the linker would.
		var raced atomic.Int32
		nodes, err := cluster.New(env.Config, func(o *cluster.Options) {
			o.Scheme = envtest.Scheme()
			o.NewClient = func(cfg *rest.Config, co client.Options) (client.Client, error) {
				c, err := client.NewWithWatch(cfg, co)
				if err != nil {
					return nil, err
				}
				return interceptor.NewClient(c, interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						if obj.GetName() == node && raced.Add(1) == 1 {
							kubeletHeartbeat(ctx, kubelet, node)
						}
						return c.Patch(ctx, obj, patch, opts...)
					},
				}), nil
			}
		})
		Expect(err).NotTo(HaveOccurred())
		l, err := nodelink.NewLinker(ctx, mgr, nodes, testmachine.Adapter{}, nodelink.Options{
			Name:     "nodelink-stale",
			Selector: labels.SelectorFromSet(labels.Set{clusterNameLabel: "stale"}),
		})
		Expect(err).NotTo(HaveOccurred())
		lctx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		go func() { _ = nodes.Start(lctx) }()
		go func() { _ = l.Start(lctx) }()

		create(builder.Machine(ns, name).WithProviderID(id).WithLabel(clusterNameLabel, "stale").Build())
		Eventually(raced.Load).Should(BeNumerically(">=", 1), "the linker patched the Node")
		Eventually(getLink(ns, name)).Should(Equal(linkedTo(node)))
		Expect(raced.Load()).To(BeNumerically(">=", 2), "the first patch was refused and a second one made")
		Expect(getNode(node)(Default)).To(HaveField("Annotations", HaveKeyWithValue(annMachine, name)))
	})
})

// kubeletHeartbeat writes the Node's Ready condition with a new heartbeat time: a status write
// that changes nothing the linker reads.
func kubeletHeartbeat(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	var n corev1.Node
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
	now := metav1.NewTime(time.Now())
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	Expect(c.Status().Update(ctx, &n)).To(Succeed())
}
