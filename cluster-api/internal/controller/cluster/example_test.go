package cluster_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	machinev1 "machineapi.dev/machine-api/api/v1beta1"
)

var _ = Describe("The documented example Cluster (docs/examples/cluster.yaml)", func() {
	It("is accepted as written and brings up its three machines", func() {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "examples", "cluster.yaml"))
		Expect(err).NotTo(HaveOccurred())
		c := &v1beta1.Cluster{}
		Expect(yaml.UnmarshalStrict(raw, c)).To(Succeed())
		c.Namespace = newNamespace()
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Eventually(clusterStatus(c.Namespace, c.Name)).Should(And(
			HaveField("Phase", v1beta1.ClusterPhaseProvisioned), HaveField("ReadyMachines", int32(3))))
		Expect(deploymentNames(c.Namespace)(Default)).To(Equal([]string{"example-workers"}))

		// make run applies the example health check next to it: it selects the pool's machines.
		raw, err = os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "examples", "healthcheck.yaml"))
		Expect(err).NotTo(HaveOccurred())
		mhc := &machinev1.MachineHealthCheck{}
		Expect(yaml.UnmarshalStrict(raw, mhc)).To(Succeed())
		mhc.Namespace = c.Namespace
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		Eventually(func() int32 {
			got := &machinev1.MachineHealthCheck{}
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(mhc), got)
			return got.Status.CurrentHealthy
		}).Should(Equal(int32(3)), "the example health check sees the pool's 3 healthy machines")
	})
})
