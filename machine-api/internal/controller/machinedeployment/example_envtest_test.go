package machinedeployment_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var _ = Describe("The example in docs/examples/machinedeployment.yaml", func() {
	It("comes up with 3 Machines, scales to 5 and rolls out a template change", func() {
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "examples", "machinedeployment.yaml"))
		Expect(err).NotTo(HaveOccurred())
		md := &v1beta1.MachineDeployment{}
		Expect(yaml.UnmarshalStrict(raw, md)).To(Succeed())
		md.Namespace = newNamespace()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		for _, m := range machines(md.Namespace) {
			Expect(nodeOf(&m).Labels).To(HaveKeyWithValue("node-role.kubernetes.io/worker", ""))
		}

		mergePatch(md, `{"spec":{"replicas":5}}`)
		Eventually(func() int { return len(live(md.Namespace)) }).Should(Equal(5))
		setInstanceType(md, "medium")
		Eventually(func() []string { return setNames(md.Namespace) }).Should(HaveLen(2))
		Eventually(readyByType(md.Namespace)).Should(HaveKey("medium"))
	})
})
