package drain_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"machineapi.dev/drain/internal/test"
	"machineapi.dev/drain/testplane"
)

// env is the kube-apiserver and etcd the suite runs against, with kube-controller-manager's
// disruption controller computing PodDisruptionBudget status (no kubelet: test.Kubelet stands in).
var env *test.Env

// TestDrainOnAPIServer runs the envtest suite. It fails, never skips, when there is no API server
// to run: see test.Start.
func TestDrainOnAPIServer(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "drain on a real kube-apiserver")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = test.Start(test.Options{Controllers: testplane.DisruptionControllers})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

var fixtures atomic.Int32

// fixture is one spec's own node and namespace, so that specs never see each other's pods.
type fixture struct {
	client    kubernetes.Interface
	node      string
	namespace string
	kubelet   test.Kubelet
}

func newFixture(ctx context.Context, node *test.NodeBuilder) *fixture {
	n := fixtures.Add(1)
	f := &fixture{client: env.Client, namespace: fmt.Sprintf("drain-%d", n)}
	built := node.Build()
	built.Name = fmt.Sprintf("node-%d", n)
	f.node = built.Name
	f.kubelet = test.Kubelet{Client: env.Client, Node: f.node}
	Expect(test.CreateNamespace(ctx, f.client, f.namespace)).To(Succeed())
	_, err := test.CreateNode(ctx, f.client, built)
	Expect(err).NotTo(HaveOccurred())
	return f
}

// pod starts a pod of the fixture's namespace, bound to its node.
func (f *fixture) pod(name string) *test.PodBuilder {
	return test.Pod(f.namespace, name).OnNode(f.node)
}

func (f *fixture) create(ctx context.Context, pods ...*test.PodBuilder) {
	GinkgoHelper()
	for _, p := range pods {
		_, err := test.CreatePod(ctx, f.client, p.Build())
		Expect(err).NotTo(HaveOccurred())
	}
}

func (f *fixture) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: f.namespace, Name: name}
}

func (f *fixture) keys(names ...string) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(names))
	for _, n := range names {
		out = append(out, f.key(n))
	}
	return out
}

// getPod returns the pod as the API server has it, or nil when it is gone.
func (f *fixture) getPod(ctx context.Context, name string) *corev1.Pod {
	GinkgoHelper()
	pods, err := f.client.CoreV1().Pods(f.namespace).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for i := range pods.Items {
		if pods.Items[i].Name == name {
			return &pods.Items[i]
		}
	}
	return nil
}

func (f *fixture) getNode(ctx context.Context) *corev1.Node {
	GinkgoHelper()
	node, err := f.client.CoreV1().Nodes().Get(ctx, f.node, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	return node
}
