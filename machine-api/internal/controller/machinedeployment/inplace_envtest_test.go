package machinedeployment_test

import (
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/stack"
	"machineapi.dev/machine-api/provider/sim"
)

var _ = Describe("In-place updates (spec.rollout.inPlace)", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("Prefer updates a providerSpec change in place: the same Machines and Nodes, each drained and uncordoned once, never more than maxUnavailable at once", func() {
		md := builder.MachineDeployment(ns, "gpu", 3).WithRollingUpdate("1", "1").
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		before := identities(ns)
		setBefore := setNames(ns)

		c := watchCordons(ns)
		setInstanceType(md, "large")
		Eventually(func(g Gomega) {
			for _, m := range machines(ns) {
				g.Expect(m.Status.InPlaceUpdate).To(BeNil())
				g.Expect(meta.FindStatusCondition(m.Status.Conditions, v1beta1.UpdatingCondition)).To(HaveField("Reason", "InPlaceUpdated"))
				g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.UpToDateCondition)).To(BeTrue())
				g.Expect(instanceType(&m)).To(Equal("large"))
			}
		}, "90s").Should(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		cordoned, peak := c.Stop()

		Expect(identities(ns)).To(Equal(before), "the same Machines with the same Nodes: nothing was replaced")
		Expect(setNames(ns)).To(Equal(setBefore), "no new MachineSet")
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(v1beta1.RevisionAnnotation, "2"))
		Expect(sets(ns)[0].Annotations).To(HaveKeyWithValue(v1beta1.RevisionAnnotation, "2"))
		for _, node := range before {
			Expect(cordoned[node]).To(Equal(1), "Node %s cordoned once", node)
		}
		Expect(peak).To(Equal(1), "never more than maxUnavailable (1) Nodes drained at once")
		for _, m := range machines(ns) {
			node := nodeOf(&m)
			Expect(node.Spec.Unschedulable).To(BeFalse(), "Node %s uncordoned", node.Name)
			Expect(node.Status.Capacity.Cpu().String()).To(Equal("16"), "Node %s reports the large type's capacity", node.Name)
		}
		for _, inst := range instancesOf(ns) {
			Expect(inst.InPlaceUpdates).To(Equal(1), "instance of %s updated once", inst.Machine)
		}
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("True/" + machinedeployment.ReasonNewSetAvailable))

		By("back to the first template by replacement: the new set does not collide with the set that kept its name")
		mergePatch(md, `{"spec":{"rollout":{"inPlace":"Never"},"template":{"spec":{"providerSpec":{"value":{"instanceType":"small"}}}}}}`)
		Eventually(readyByType(ns), "60s").Should(Equal(map[string]int{"small": 3}))
		Eventually(func() int { return len(machines(ns)) }, "60s").Should(Equal(3))
		Expect(setNames(ns)).To(ContainElement(setBefore[0]+"-3"), "named with its revision")
		Eventually(status(md)).Should(Equal("3/3/3/3"))
	})

	It("a disruption budget paces disruptive in-place updates below maxUnavailable", func() {
		md := builder.MachineDeployment(ns, "store", 3).WithRollingUpdate("0", "3").
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}).Build()
		md.Spec.Disruption = &v1beta1.Disruption{Budgets: []v1beta1.DisruptionBudget{{Name: "one", Nodes: intstr.FromInt32(1)}}}
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		before := identities(ns)

		c := watchCordons(ns)
		setInstanceType(md, "medium")
		Eventually(readyByType(ns), "90s").Should(Equal(map[string]int{"medium": 3}))
		Eventually(func(g Gomega) {
			for _, m := range machines(ns) {
				g.Expect(m.Status.InPlaceUpdate).To(BeNil())
			}
		}).Should(Succeed())
		cordoned, peak := c.Stop()
		Expect(peak).To(Equal(1), "the budget allows one Node disrupted at a time, maxUnavailable 3")
		Expect(cordoned).To(HaveLen(3))
		Expect(identities(ns)).To(Equal(before))
	})

	It("Prefer replaces the Machines when the provider cannot apply the change in place", func() {
		md := builder.MachineDeployment(ns, "web", 2).
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		before := identities(ns)

		mergePatch(md, `{"spec":{"template":{"spec":{"versions":{"kubelet":"v1.37.2"}}}}}`)
		Eventually(func() []string { return setNames(ns) }).Should(HaveLen(2), "a new MachineSet")
		Eventually(func() int { return len(machines(ns)) }, "60s").Should(Equal(2))
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		for uid := range identities(ns) {
			Expect(before).NotTo(HaveKey(uid), "replaced")
		}
	})

	It("Only stalls a change the provider cannot apply, naming the fields, and replaces nothing", func() {
		md := builder.MachineDeployment(ns, "db", 2).
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlaceOnly}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		before := identities(ns)

		mergePatch(md, `{"spec":{"template":{"spec":{"versions":{"kubelet":"v1.37.2"},"providerSpec":{"value":{"instanceType":"medium"}}}}}}`)
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("False/" + machinedeployment.ReasonInPlaceUnsupported))
		c := meta.FindStatusCondition(getMD(md).Status.Conditions, v1beta1.ProgressingCondition)
		Expect(c.Message).To(ContainSubstring("spec.versions.kubelet"))
		Consistently(func() map[types.UID]string { return identities(ns) }, "3s").Should(Equal(before), "nothing replaced")
		Expect(setNames(ns)).To(HaveLen(1), "no new MachineSet")
		Expect(liveByType(ns)()).To(Equal(map[string]int{"small": 2}), "nothing updated either")

		By("a change it can apply goes on in place")
		mergePatch(md, `{"spec":{"template":{"spec":{"versions":null}}}}`)
		Eventually(readyByType(ns), "60s").Should(Equal(map[string]int{"medium": 2}))
		Expect(identities(ns)).To(Equal(before))

		By("a template the provider refuses stalls too, saying why")
		mergePatch(md, `{"spec":{"template":{"spec":{"providerSpec":{"value":{"instanceType":"huge"}}}}}}`)
		Eventually(func() string {
			c := meta.FindStatusCondition(getMD(md).Status.Conditions, v1beta1.ProgressingCondition)
			if c == nil || c.Reason != machinedeployment.ReasonInPlaceUnsupported {
				return ""
			}
			return c.Message
		}).Should(ContainSubstring(`instanceType "huge" is not offered`))
		Expect(identities(ns)).To(Equal(before))
	})

	It("a manager killed in the middle of an update resumes it without updating the instance a second time", func() {
		md := builder.MachineDeployment(ns, "batch", 1).
			WithTemplateAnnotations(map[string]string{sim.RebootDurationAnnotation: "4s"}).
			WithRollout(v1beta1.MachineDeploymentRollout{InPlace: v1beta1.InPlacePrefer}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("1/1/1/1"))
		before := identities(ns)

		setInstanceType(md, "medium")
		Eventually(func() string {
			ms := machines(ns)
			if len(ms) != 1 {
				return ""
			}
			c := meta.FindStatusCondition(ms[0].Status.Conditions, v1beta1.UpdatingCondition)
			if c == nil || c.Status != "True" {
				return ""
			}
			return c.Reason
		}).Should(Equal("UpdatingInstance"))
		provider := st.Provider
		Expect(st.Stop()).To(Succeed())
		var err error
		st, err = stack.Start(env.Config, stack.Options{Provider: provider})
		Expect(err).NotTo(HaveOccurred())

		Eventually(readyByType(ns), "60s").Should(Equal(map[string]int{"medium": 1}))
		Eventually(func() *v1beta1.MachineInPlaceUpdate { return machines(ns)[0].Status.InPlaceUpdate }).Should(BeNil())
		Expect(identities(ns)).To(Equal(before))
		Expect(instancesOf(ns)).To(HaveLen(1))
		Expect(instancesOf(ns)[0].InPlaceUpdates).To(Equal(1), "updated once, not again after the restart")
		Expect(nodeOf(&machines(ns)[0]).Spec.Unschedulable).To(BeFalse(), "uncordoned")
	})
})

// identities maps each Machine of ns to its Node's name.
func identities(ns string) map[types.UID]string {
	out := map[types.UID]string{}
	for _, m := range machines(ns) {
		node := ""
		if m.Status.NodeRef != nil {
			node = m.Status.NodeRef.Name
		}
		out[m.UID] = node
	}
	return out
}

// instancesOf returns the sim's instances of the Machines of ns.
func instancesOf(ns string) []sim.Instance {
	var out []sim.Instance
	for _, i := range st.Sim.Instances() {
		if i.Namespace == ns {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Machine < out[b].Machine })
	return out
}

// cordons polls the Nodes of ns's Machines every 20ms, counting how often each one turns
// unschedulable and the most unschedulable at once.
type cordons struct {
	stop  chan struct{}
	done  sync.WaitGroup
	count map[string]int
	peak  int
}

func watchCordons(ns string) *cordons {
	c := &cordons{stop: make(chan struct{}), count: map[string]int{}}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		was := map[string]bool{}
		for {
			now := 0
			for _, m := range machines(ns) {
				node := nodeOf(&m)
				if node == nil {
					continue
				}
				if node.Spec.Unschedulable {
					now++
					if !was[node.Name] {
						c.count[node.Name]++
					}
				}
				was[node.Name] = node.Spec.Unschedulable
			}
			c.peak = max(c.peak, now)
			select {
			case <-c.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return c
}

func (c *cordons) Stop() (map[string]int, int) {
	close(c.stop)
	c.done.Wait()
	return c.count, c.peak
}
