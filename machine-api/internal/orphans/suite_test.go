package orphans_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/manager"
)

// The suite runs the whole manager with the simulated provider against a real API server; the
// specs run the orphan collector's passes by hand on a fake clock.
var (
	env *envtest.Environment
	k8s client.Client
	st  *stack.Stack
	ctx = context.Background()
)

func TestOrphans(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Orphan instances on a real API server")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.Start()
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
