package machinelink_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
)

// The suite runs the whole manager (every controller, the node linker and the simulated provider,
// whose kubelets register Nodes as a bootstrapped kubelet does and run the pods bound to them)
// beside a real kube-scheduler, so that where pods land is decided as in a cluster.
var (
	env *envtest.Environment
	k8s client.Client
	st  *stack.Stack
	ctx = context.Background()
)

func TestMachineLinkWithScheduler(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Machines, their Nodes and the real kube-scheduler")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.StartWith(envtest.Options{Scheduler: true})
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	// Machines labelled holdLink are not linked until the label goes: their Nodes register and
	// wait, as they would while the node linker is down or slow.
	mo := manager.DefaultOptions()
	mo.NodeLinkSelector = "!" + holdLink
	st, err = stack.Start(env.Config, stack.Options{Manager: &mo})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if st != nil {
		Expect(st.Stop()).To(Succeed())
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
