package machine_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/provider/sim"
)

var _ = Describe("Provisioning a Machine", func() {
	var (
		ns string
		st *stack.Stack
	)
	BeforeEach(func() { ns = newNamespace() })
	AfterEach(func() {
		if st != nil {
			Expect(st.Stop()).To(Succeed())
			st = nil
		}
	})
	start := func(o stack.Options) {
		var err error
		st, err = stack.Start(env.Config, o)
		Expect(err).NotTo(HaveOccurred())
	}

	It("goes Pending -> Provisioning -> Provisioned -> Running, and its Node gets the labels and taints of its spec", func() {
		start(stack.Options{})
		m := builder.Machine(ns, "web-1").
			WithAnnotations(map[string]string{sim.BootDelayAnnotation: "1s"}).
			WithNodeLabels(map[string]string{"node-role.kubernetes.io/worker": "", "team": "web"}).
			WithTaints(corev1.Taint{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}).
			Build()
		w, err := k8sWatch(ns)
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)

		var phases []v1beta1.MachinePhase
		var linkedBeforeRunning []string // versions showing the link without Running
		Eventually(func() []v1beta1.MachinePhase {
			for {
				select {
				case ev := <-w.ResultChan():
					if got, ok := ev.Object.(*v1beta1.Machine); ok && got.Name == "web-1" {
						if p := got.Status.Phase; p != "" && (len(phases) == 0 || phases[len(phases)-1] != p) {
							phases = append(phases, p)
						}
						if got.Status.NodeRef != nil && got.Status.Phase != v1beta1.MachinePhaseRunning {
							linkedBeforeRunning = append(linkedBeforeRunning, got.ResourceVersion+" "+string(got.Status.Phase))
						}
					}
				default:
					return phases
				}
			}
		}).Should(ContainElement(v1beta1.MachinePhaseRunning))
		Expect(phases).To(Equal([]v1beta1.MachinePhase{
			v1beta1.MachinePhaseProvisioning, v1beta1.MachinePhaseProvisioned, v1beta1.MachinePhaseRunning}),
			"Pending is skipped: Provisioning is written in the first reconcile, before Create")
		Expect(linkedBeforeRunning).To(BeEmpty(), "the link to a Ready Node and Running are one status write")

		got := getMachine(key)()
		Expect(got.Spec.ProviderID).To(HavePrefix(sim.ProviderIDPrefix))
		Expect(got.Status.ProvisionedTime).NotTo(BeNil())
		Expect(got.Finalizers).To(ContainElement(v1beta1.MachineFinalizer))
		Expect(condition(key, v1beta1.ReadyCondition)()).To(HavePrefix("True/NodeReady"))
		Expect(condition(key, v1beta1.InstanceProvisionedCondition)()).To(HavePrefix("True/InstanceExists"))
		Expect(condition(key, v1beta1.NodeLinkedCondition)()).To(HavePrefix("True/"))

		node := nodeOf(key)
		Expect(node.Spec.ProviderID).To(Equal(got.Spec.ProviderID))
		Eventually(func() map[string]string {
			n := &corev1.Node{}
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(node), n)
			return n.Labels
		}).Should(And(HaveKeyWithValue("node-role.kubernetes.io/worker", ""), HaveKeyWithValue("team", "web")))
		Eventually(func() []corev1.Taint {
			n := &corev1.Node{}
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(node), n)
			return n.Spec.Taints
		}).Should(ContainElement(HaveField("Key", "dedicated")))
		Expect(got.Status.Versions).NotTo(BeNil())
	})

	It("provisions from a MachineClass, with the Node's capacity from the class, and keeps the class while it is used", func() {
		start(stack.Options{})
		class := &v1beta1.MachineClass{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"},
			Spec: v1beta1.MachineClassSpec{
				ProviderSpec: runtime.RawExtension{Raw: []byte(`{"instanceType":"large"}`)},
				NodeTemplate: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48")}},
			},
		}
		Expect(k8s.Create(ctx, class)).To(Succeed())
		m := builder.Machine(ns, "from-class").WithMachineClass("big").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))
		node := nodeOf(key)
		Expect(node.Status.Capacity.Cpu().String()).To(Equal("48"))
		Expect(node.Labels).To(HaveKeyWithValue(corev1.LabelInstanceTypeStable, "large"))
		Expect(getMachine(key)().Spec.ProviderSpec.Value).To(BeNil(), "the stored Machine keeps its class reference")

		Eventually(func() []string {
			c := &v1beta1.MachineClass{}
			_ = k8s.Get(ctx, client.ObjectKeyFromObject(class), c)
			return c.Finalizers
		}).Should(ContainElement(v1beta1.MachineClassFinalizer))
		Expect(k8s.Delete(ctx, class)).To(Succeed())
		Consistently(gone(class), "2s").Should(BeFalse(), "a class in use is not deleted")
		Expect(k8s.Delete(ctx, m)).To(Succeed())
		Eventually(gone(m)).Should(BeTrue())
		Eventually(gone(class)).Should(BeTrue(), "the class goes once no machine uses it")
	})

	It("fails a Machine whose configuration is invalid, and provisions it once the spec is fixed", func() {
		start(stack.Options{})
		m := builder.Machine(ns, "bad-size").WithInstanceType("enormous").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseFailed))
		got := getMachine(key)()
		Expect(*got.Status.FailureReason).To(Equal(v1beta1.InvalidConfigurationFailure))
		Expect(*got.Status.FailureMessage).To(ContainSubstring(`instanceType "enormous" is not offered`))
		Expect(condition(key, v1beta1.InstanceProvisionedCondition)()).To(ContainSubstring("use one of large, medium, small"))
		Expect(instancesIn(st, ns)).To(BeEmpty())

		Expect(updateMachine(key, func(m *v1beta1.Machine) {
			m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(`{"instanceType":"medium"}`)}
		})).To(Succeed())
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))
		Expect(getMachine(key)().Status.FailureReason).To(BeNil())
	})

	It("retries transient provider errors with backoff and says so meanwhile", func() {
		flaky := &flakyProvider{Provider: stack.NewSim(), failures: 3}
		start(stack.Options{Provider: flaky})
		w, err := k8sWatch(ns)
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		m := builder.Machine(ns, "flaky").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))
		Expect(flaky.calls).To(Equal(4), "three failures, then one successful Create")

		// While it retried, the machine said why.
		var messages []string
		Eventually(func() []string {
			for {
				select {
				case ev := <-w.ResultChan():
					if got, ok := ev.Object.(*v1beta1.Machine); ok {
						if c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.InstanceProvisionedCondition); c != nil {
							messages = append(messages, c.Reason+": "+c.Message)
						}
					}
				default:
					return messages
				}
			}
		}).Should(ContainElement(ContainSubstring("ProviderError: the provider failed, retrying with backoff: cloud API unavailable (injected)")))
	})

	It("does not create a second instance when the manager dies between Create and recording it", func() {
		instances := stack.NewSim()
		crashing := &crashingProvider{Provider: instances, created: make(chan struct{})}
		start(stack.Options{Provider: crashing})
		m := builder.Machine(ns, "crash").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(crashing.created).Should(BeClosed())
		Expect(st.Stop()).To(Succeed())
		Expect(getMachine(client.ObjectKeyFromObject(m))().Spec.ProviderID).To(BeEmpty(), "the first manager never recorded the instance")

		start(stack.Options{Provider: instances})
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))
		Expect(instances.CreatedInstances()).To(Equal(1), "the restarted manager found the instance instead of creating another")
		Expect(getMachine(key)().Spec.ProviderID).To(Equal(instances.Instances()[0].ProviderID))
	})

	It("turns a Machine whose instance vanished into Failed and does not re-create it", func() {
		start(stack.Options{})
		m := builder.Machine(ns, "vanishing").Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning))

		Expect(updateMachine(key, func(m *v1beta1.Machine) { m.Annotations = map[string]string{sim.VanishAnnotation: ""} })).To(Succeed())
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseFailed))
		Expect(*getMachine(key)().Status.FailureReason).To(Equal(v1beta1.InstanceMissingFailure))
		Consistently(func() int { return st.Sim.CreatedInstances() }, "2s").Should(Equal(1))
	})

	DescribeTable("leaves a paused Machine alone", func(annotation string) {
		start(stack.Options{})
		m := builder.Machine(ns, "paused").WithAnnotations(map[string]string{annotation: ""}).Build()
		Expect(k8s.Create(ctx, m)).To(Succeed())
		key := client.ObjectKeyFromObject(m)
		Consistently(func() string {
			got := getMachine(key)()
			return string(got.Status.Phase) + got.Spec.ProviderID
		}, "3s").Should(BeEmpty())
		Expect(getMachine(key)().Finalizers).To(BeEmpty())
		Expect(instancesIn(st, ns)).To(BeEmpty())

		Expect(updateMachine(key, func(m *v1beta1.Machine) { m.Annotations = nil })).To(Succeed())
		Eventually(phaseOf(key)).Should(Equal(v1beta1.MachinePhaseRunning), "unpausing resumes")
	},
		Entry("by machine.machineapi.dev/paused", v1beta1.PausedAnnotation),
		Entry("by cluster.x-k8s.io/paused", v1beta1.ClusterAPIPausedAnnotation),
	)
})

// k8sWatch watches the Machines of a namespace.
func k8sWatch(ns string) (watch.Interface, error) {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		return nil, err
	}
	return wc.Watch(ctx, &v1beta1.MachineList{}, client.InNamespace(ns))
}

var (
	_ = json.Marshal
	_ = time.Second
	_ = types.NamespacedName{}
)
