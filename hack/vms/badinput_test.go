package vms_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/drain/testplane/process"
	"machineapi.dev/hack/vms"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"
)

// Each spec makes one Machine the provider cannot make a VM of, checks that the Machine says what
// to change, that nothing of it exists on the host or in the cluster, and that it can be deleted.
var _ = Describe("A libvirt Machine the provider cannot make", func() {
	// badMachine creates a Machine of the loopback providerSpec changed by mutate, and deletes it
	// when the spec ends.
	badMachine := func(name string, mutate func(spec map[string]any)) *v1beta1.Machine {
		GinkgoHelper()
		spec := vms.LoopbackSpec(*libvirtURI, *poolName, *imageVolume)
		mutate(spec)
		m := vms.Machine(ns, name, spec)
		Expect(k8s.Create(ctx, m)).To(Succeed())
		DeferCleanup(func() {
			deleteAndWait(m, 2*time.Minute)
			expectNothingOf(m.UID)
		})
		return m
	}
	get := func(m *v1beta1.Machine) func() *v1beta1.Machine {
		return func() *v1beta1.Machine {
			got := &v1beta1.Machine{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), got)).To(Succeed())
			return got
		}
	}
	failure := func(m *v1beta1.Machine) string {
		if m.Status.FailureReason == nil {
			return ""
		}
		return string(*m.Status.FailureReason) + ": " + ptr.Deref(m.Status.FailureMessage, "")
	}

	It("on an unreachable libvirt host: names the URI and what to check, and keeps trying", func() {
		port, err := process.FreePort() // on loopback, where nothing listens
		Expect(err).NotTo(HaveOccurred())
		uri := fmt.Sprintf("qemu+tcp://127.0.0.1:%d/system", port)
		m := badMachine("unreachable", func(s map[string]any) { s["uri"] = uri })
		Eventually(get(m)).Should(WithTransform(func(m *v1beta1.Machine) string { return condition(m, v1beta1.InstanceProvisionedCondition) },
			And(HavePrefix("False/"), ContainSubstring("cannot reach libvirt at "+uri), ContainSubstring("check that libvirtd runs on that host"))))
		Consistently(get(m), "10s").Should(WithTransform(func(m *v1beta1.Machine) v1beta1.MachinePhase { return m.Status.Phase },
			Not(Equal(v1beta1.MachinePhaseFailed))), "an unreachable host is transient: the Machine is not Failed")
		expectNothingOf(m.UID)
	})

	It("with a missing image volume: Failed, naming the volume and how to build and import it", func() {
		volume := "machineapi-node-missing-" + randomHex(3) + ".raw"
		m := badMachine("no-image", func(s map[string]any) {
			s["image"] = map[string]any{"pool": *poolName, "volume": volume}
		})
		Eventually(get(m)).Should(WithTransform(failure, And(
			HavePrefix(string(v1beta1.InvalidConfigurationFailure)+": "), ContainSubstring(fmt.Sprintf("volume %q not found in pool %q", volume, *poolName)),
			ContainSubstring("make node-image"), ContainSubstring("import-node-image.sh"))))
		Expect(get(m)().Status.Phase).To(Equal(v1beta1.MachinePhaseFailed))
		expectNothingOf(m.UID)
	})

	It("with too little memory: Failed, naming the field and the least it takes", func() {
		m := badMachine("small", func(s map[string]any) { s["memory"] = "256Mi" })
		Eventually(get(m)).Should(WithTransform(failure, And(
			HavePrefix(string(v1beta1.InvalidConfigurationFailure)+": "), ContainSubstring("memory"), ContainSubstring("must be at least 512Mi"))))
		Expect(get(m)().Status.Phase).To(Equal(v1beta1.MachinePhaseFailed))
		expectNothingOf(m.UID)
	})
})

// expectNothingOf checks that no domain, volume or bootstrap token of the Machine exists.
func expectNothingOf(uid types.UID) {
	GinkgoHelper()
	_, found, err := host.DomainOf(uid)
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeFalse(), "a domain of Machine %s", uid)
	Expect(host.VolumesOf(uid)).To(BeEmpty(), "volumes of Machine %s", uid)
	var secrets corev1.SecretList
	Expect(k8s.List(ctx, &secrets, client.InNamespace("kube-system"), client.MatchingLabels{bootstrap.MachineUIDLabel: string(uid)})).To(Succeed())
	Expect(secrets.Items).To(BeEmpty(), "bootstrap tokens of Machine %s", uid)
}
