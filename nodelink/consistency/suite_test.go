package consistency_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"machineapi.dev/nodelink/internal/test/envtest"
)

// The envtest specs run guarded controllers against a real API server, with a real cache whose
// lag is whatever it is: the race is the test.
var (
	env *envtest.Environment
	k8s client.Client
	ctx = context.Background()
)

func TestConsistency(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	RunSpecs(t, "consistency guard on a real API server")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.Start(envtest.Options{WithoutCRDs: true})
	Expect(err).NotTo(HaveOccurred(), "the envtest suite needs a control plane")
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	k8s, err = client.New(env.Config, client.Options{Scheme: envtest.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})
