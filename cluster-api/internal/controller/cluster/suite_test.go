package cluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctrl "sigs.k8s.io/controller-runtime"

	machinemanager "machineapi.dev/machine-api/manager"
	machinesim "machineapi.dev/machine-api/provider/sim"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/test/envtest"
	"machineapi.dev/cluster-api/manager"
	"machineapi.dev/cluster-api/provider/sim"
)

var (
	env        *envtest.Environment
	k8s        client.Client
	clusterSim *sim.Provider
	ctx        = context.Background()
)

func TestClusterController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "Cluster controller with machine-manager on a real API server")
}

// The suite runs what a user runs: machine-manager (every machine-api controller and the
// simulated machine provider) and cluster-manager (the Cluster controller and the simulated
// cluster provider) against one management API server with both modules' CRDs.
//
// machine-manager is scoped with --machine-selector='!cluster.machineapi.dev/remote-nodes': the
// Machines of Clusters whose Nodes live in a workload cluster are linked by cluster-manager only
// (see remote_test.go). machine-api has no option yet to skip only its node linker for them.
var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.StartManagement()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())

	machines, err := machinesim.New(machinesim.Options{HeartbeatInterval: -1, Seed: 1})
	Expect(err).NotTo(HaveOccurred())
	mo := machinemanager.DefaultOptions()
	mo.MetricsBindAddress, mo.HealthProbeBindAddress = "0", "0"
	mo.SkipControllerNameValidation = true
	mo.MachineSelector = "!" + v1beta1.RemoteNodesLabel
	mo.DrainGracePeriodSeconds = 0
	startManager(func(ctx context.Context) (ctrl.Manager, error) {
		return machinemanager.New(ctx, env.Config, machines, mo)
	})

	clusterSim, err = sim.New(sim.Options{ProvisionDelay: time.Second, DeleteDelay: 500 * time.Millisecond})
	Expect(err).NotTo(HaveOccurred())
	co := manager.DefaultOptions()
	co.MetricsBindAddress, co.HealthProbeBindAddress = "0", "0"
	co.SkipControllerNameValidation = true
	co.KubeconfigPollInterval = time.Second
	co.WorkloadProbeInterval = 300 * time.Millisecond
	co.LinkerRestartDelay = time.Second
	co.LinkerCacheSyncTimeout = 4 * time.Second
	startManager(func(ctx context.Context) (ctrl.Manager, error) { return manager.New(ctx, env.Config, clusterSim, co) })
})

// startManager builds a manager, starts it until the suite ends and waits for its caches.
func startManager(build func(context.Context) (ctrl.Manager, error)) {
	GinkgoHelper()
	mctx, cancel := context.WithCancel(ctx)
	mgr, err := build(mctx)
	Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
	syncCtx, syncCancel := context.WithTimeout(mctx, 30*time.Second)
	defer syncCancel()
	Expect(mgr.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue(), "the manager's caches did not sync")
}

func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
