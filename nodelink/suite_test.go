package nodelink_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/internal/test/envtest"
	"machineapi.dev/nodelink/internal/test/testmachine"
)

// The suite runs a manager with two linkers against a real API server: one for testmachine's
// Machines (typed adapter recording links by server-side apply, machine.machineapi.dev
// annotations) and one for the Cluster API shaped cluster.x-k8s.io Machines (unstructured
// adapter recording links by merge patch, cluster.x-k8s.io annotations). Machines labelled with a
// cluster name are left to the remote linkers of remote_test.go (typed adapter, merge patch).

const (
	clusterNameLabel = "cluster.machineapi.dev/cluster-name"
	pausedAnnotation = "machine.machineapi.dev/paused"
)

var (
	env       *envtest.Environment
	k8sClient client.Client
	mgr       manager.Manager
	ctx       context.Context
	stop      context.CancelFunc
	seq       atomic.Int64
)

func TestNodelink(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	RunSpecs(t, "nodelink envtest suite")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, stop = context.WithCancel(context.Background())

	var err error
	env, err = envtest.Start(envtest.Options{})
	Expect(err).NotTo(HaveOccurred(), "the envtest suite needs a control plane")

	k8sClient, err = client.New(env.Config, client.Options{Scheme: envtest.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	mgr, err = manager.New(env.Config, manager.Options{
		Scheme:                 envtest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())

	notRemote, err := labels.Parse("!" + clusterNameLabel)
	Expect(err).NotTo(HaveOccurred())
	paused := func(o client.Object) bool { _, ok := o.GetAnnotations()[pausedAnnotation]; return ok }
	Expect(nodelink.Setup(ctx, mgr, mgr, testmachine.ApplyAdapter{}, nodelink.Options{Selector: notRemote, Paused: paused})).To(Succeed())

	capi, err := nodelink.NewUnstructuredAdapter(capiGVK, capiPaths())
	Expect(err).NotTo(HaveOccurred())
	Expect(nodelink.Setup(ctx, mgr, mgr, capi, nodelink.Options{Name: "nodelink-capi", AnnotationPrefix: "cluster.x-k8s.io"})).To(Succeed())

	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// unique returns a name nobody else in the suite uses.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// uniqueIP returns an InternalIP nobody else in the suite uses.
func uniqueIP() string {
	n := seq.Add(1)
	return fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
}

// newNamespace creates a namespace for one spec's machines.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unique("ns")}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// machineState is what `kubectl get machine -o yaml` shows of the link.
type machineState struct {
	NodeRef string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

func getMachine(ns, name string) func(Gomega) machineState {
	return func(g Gomega) machineState {
		var m testmachine.Machine
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m)).To(Succeed())
		var s machineState
		if m.Status.NodeRef != nil {
			s.NodeRef = m.Status.NodeRef.Name
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, nodelink.ConditionNodeLinked); c != nil {
			s.Status, s.Reason, s.Message = c.Status, c.Reason, c.Message
		}
		return s
	}
}

func getNode(name string) func(Gomega) *corev1.Node {
	return func(g Gomega) *corev1.Node {
		var n corev1.Node
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
		return &n
	}
}

// eventReasons returns the reasons of the events about a machine.
func eventReasons(ns, name string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

func linkedTo(node string) machineState {
	return machineState{NodeRef: node, Status: metav1.ConditionTrue, Reason: nodelink.ReasonLinked}
}

// getLink is getMachine without the condition's message.
func getLink(ns, name string) func(Gomega) machineState {
	return func(g Gomega) machineState {
		s := getMachine(ns, name)(g)
		s.Message = ""
		return s
	}
}
