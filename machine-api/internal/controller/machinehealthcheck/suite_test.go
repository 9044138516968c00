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
	"machineapi.dev/machine-api/manager"
)

// The suite runs against a real API server with the module's CRDs and, from testdata/crd, a
// stand-in external remediation kind and its template kind. Each spec works in its own namespace.
// The whole-behaviour specs (mhc_test.go) run the whole manager (every controller and the
// simulated provider), scoped to their namespace, and break Nodes with the sim provider's fault
// knobs; the reconcile-once specs (reconcile_test.go) run no manager and step a fake clock.

var (
	env *envtest.Environment
	k8s client.Client
	ctx = context.Background()
)

func TestMachineHealthCheck(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(45 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second) // decisions take milliseconds: no timeout runs in these specs
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
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
