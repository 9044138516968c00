package remotedrain_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"machineapi.dev/drain"
	"machineapi.dev/drain/testplane"
	"machineapi.dev/nodelink/consistency"

	"machineapi.dev/cluster-api/internal/controller/remotedrain"
	"machineapi.dev/cluster-api/internal/index"
	"machineapi.dev/cluster-api/internal/test/envtest"
	"machineapi.dev/cluster-api/manager"
)

var (
	mgmt, workload *envtest.Environment
	k8s, wl        client.Client
	ctx            = context.Background()
)

func TestRemoteDrain(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Remote drain controller with a management and a workload API server")
}

// The suite runs the remote drain controller alone against a management API server (both
// modules' CRDs) and drains Nodes of a second, bare API server: the workload cluster, reached
// through the kubeconfig in a Secret. The machine controller does not run: Machines keep a
// finalizer of the test's so that a deleted one stays, deleting, as the machine controller would
// hold it in WaitingForPreDrainHooks; the specs assert on the hook, the Node and its pods. The
// test plays the kubelet (it deletes evicted pods); kube-controller-manager's disruption controller
// computes PodDisruptionBudget status in the workload cluster.
var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	mgmt, err = envtest.StartManagement()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(mgmt.Stop()).To(Succeed()) })
	workload, err = envtest.StartWorkload(10*time.Second, testplane.DisruptionControllers...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(workload.Stop()).To(Succeed()) })
	k8s, err = client.New(mgmt.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	wl, err = client.New(workload.Config, client.Options{})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(mgmt.Config, ctrl.Options{
		Scheme:     manager.Scheme(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Client:     client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	r := &remotedrain.Reconciler{
		Client:    consistency.NewClient(mgr.GetClient(), consistency.ClientOptions{Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader()}),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("remotedrain-controller"),
		Drain:     drain.Options{DeleteEmptyDirData: true},
	}
	mctx, cancel := context.WithCancel(ctx)
	Expect(index.Register(mctx, mgr.GetFieldIndexer())).To(Succeed())
	Expect(r.SetupWithManager(mctx, mgr, consistency.New(consistency.Options{Controller: "remotedrain"}))).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
})

func newNamespace(c client.Client) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "remotedrain-"}}
	Expect(c.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
