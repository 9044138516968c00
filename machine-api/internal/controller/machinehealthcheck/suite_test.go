package machinehealthcheck_test

import (
	"context"
	"path/filepath"
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

// The suite runs the whole manager (every controller and the simulated provider) once, against a
// real API server with the module's CRDs and, from testdata/crd, a stand-in external remediation
// kind and its template kind. Each spec works in its own namespace and breaks Nodes with the sim
// provider's fault knobs.

var (
	env *envtest.Environment
	st  *stack.Stack
	k8s client.Client
	ctx = context.Background()
)

func TestMachineHealthCheck(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(45 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "MachineHealthCheck controller on a real API server")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.Start(filepath.Join("testdata", "crd"))
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	st, err = stack.Start(env.Config, stack.Options{})
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
