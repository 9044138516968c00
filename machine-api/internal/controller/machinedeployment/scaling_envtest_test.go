package machinedeployment_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/stack"
)

var _ = Describe("Scaling a MachineDeployment", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("in the middle of a rollout scales both MachineSets in proportion, once", func() {
		md := builder.MachineDeployment(ns, "web", 4).WithRollingUpdate("2", "0").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("4/4/4/4"))
		// The new template is rejected by the provider: its Machines never become available, so
		// the rollout stops at the surge: 4 old, 2 new.
		setInstanceType(md, "unknown-type")
		Eventually(setReplicas(ns)).Should(Equal(map[string]int32{"small": 4, "unknown-type": 2}))

		mergePatch(md, `{"spec":{"replicas":8}}`)
		// 8 + 2 surge = 10 spread as 4:2 was over 6: 4*10/6 = 6.67 -> 7 and 2*10/6 = 3.33 -> 3.
		want := map[string]int32{"small": 7, "unknown-type": 3}
		Eventually(setReplicas(ns)).Should(Equal(want))
		Consistently(setReplicas(ns), "3s").Should(Equal(want), "the scale is applied once")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 7}))
		Eventually(liveByType(ns)).Should(Equal(map[string]int{"small": 7, "unknown-type": 3}))
		for _, s := range sets(ns) {
			Expect(s.Annotations).To(HaveKeyWithValue(machinedeployment.DesiredReplicasAnnotation, "8"))
			Expect(s.Annotations).To(HaveKeyWithValue(machinedeployment.MaxReplicasAnnotation, "10"))
		}
	})

	It("through the scale subresource, like kubectl scale and a merge patch of the scale object", func() {
		md := builder.MachineDeployment(ns, "pool", 1).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("1/1/1/1"))
		Expect(getMD(md).Status.Selector).To(Equal(builder.PoolLabel + "=pool"))
		gr := schema.GroupResource{Group: v1beta1.GroupVersion.Group, Resource: "machinedeployments"}
		sc := scales(ns)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error { // kubectl scale md/pool --replicas=3
			s, err := sc.Get(ctx, gr, "pool", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Replicas = 3
			_, err = sc.Update(ctx, gr, s, metav1.UpdateOptions{})
			return err
		})).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))

		_, err := sc.Patch(ctx, v1beta1.GroupVersion.WithResource("machinedeployments"), "pool", types.MergePatchType,
			[]byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string { return live(ns) }).Should(HaveLen(2))
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		Expect(setNames(ns)).To(HaveLen(1))
	})

	It("does not overshoot when the manager restarts in the middle of a scale-up", func() {
		const replicas = 40
		md := builder.MachineDeployment(ns, "big", replicas).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(func() int { return len(machines(ns)) }, "30s", "5ms").Should(BeNumerically(">", 0))
		Expect(st.Stop()).To(Succeed())
		stopped := len(machines(ns))
		GinkgoWriter.Printf("stopped the manager with %d of %d Machines created\n", stopped, replicas)
		var err error
		st, err = stack.Start(env.Config, stack.Options{Provider: st.Provider})
		Expect(err).NotTo(HaveOccurred())

		Eventually(status(md)).Should(Equal("40/40/40/40"))
		instances := func() int {
			n := 0
			for _, inst := range st.Sim.Instances() {
				if inst.Namespace == ns {
					n++
				}
			}
			return n
		}
		Consistently(func() []int { return []int{len(machines(ns)), len(live(ns)), instances()} }, "2s").
			Should(Equal([]int{replicas, replicas, replicas}), "no Machine or instance too many, none deleted")
		Expect(setNames(ns)).To(HaveLen(1))
	})

	It("deletes its MachineSets and their Machines before it goes away", func() {
		md := builder.MachineDeployment(ns, "gone", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		Expect(getMD(md).Finalizers).To(ContainElement(v1beta1.MachineDeploymentFinalizer))
		Expect(k8s.Delete(ctx, md)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(md), &v1beta1.MachineDeployment{}))
		}).Should(BeTrue())
		Expect(sets(ns)).To(BeEmpty())
		Expect(machines(ns)).To(BeEmpty())
	})
})

// scales returns the client kubectl scale and the cluster-autoscaler use.
func scales(ns string) scale.ScaleInterface {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sc, err := scale.NewForConfig(env.Config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	Expect(err).NotTo(HaveOccurred())
	return sc.Scales(ns)
}
