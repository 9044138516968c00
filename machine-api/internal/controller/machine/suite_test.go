package machine_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/drain/testplane"

	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/manager"
)

var (
	env *envtest.Environment
	k8s client.Client
	ctx = context.Background()
)

func TestMachineController(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Machine controller on a real API server")
}

var _ = BeforeSuite(func() {
	var err error
	// The drain tests need PodDisruptionBudget status: the real disruption controller computes it.
	env, err = envtest.StartWith(envtest.Options{Controllers: testplane.DisruptionControllers})
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "machine-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
