package machinedeployment_test

import (
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/test/builder"
)

// What the cluster-autoscaler relies on from a MachineDeployment (docs/autoscaler.md). The test
// plays the autoscaler's part: it marks a Machine with the delete-machine annotation, then lowers
// the deployment's replicas by one, in that order and at once, as the autoscaler does.
var _ = Describe("A MachineDeployment driven by the cluster-autoscaler", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// markAndShrink marks m for deletion and lowers md's replicas to replicas.
	markAndShrink := func(md *v1beta1.MachineDeployment, m *v1beta1.Machine, replicas string) {
		GinkgoHelper()
		mergePatch(m, `{"metadata":{"annotations":{"`+v1beta1.DeleteMachineAnnotation+`":"2026-12-02 10:00:00"}}}`)
		mergePatch(md, `{"spec":{"replicas":`+replicas+`}}`)
	}
	// liveOf returns the names of the live Machines of instance type t, sorted.
	liveOf := func(t string) func() []string {
		return func() []string {
			var out []string
			for _, m := range machines(ns) {
				if m.DeletionTimestamp.IsZero() && instanceType(&m) == t {
					out = append(out, m.Name)
				}
			}
			sort.Strings(out)
			return out
		}
	}
	oneOf := func(t string) *v1beta1.Machine {
		GinkgoHelper()
		for _, m := range machines(ns) {
			if m.DeletionTimestamp.IsZero() && instanceType(&m) == t {
				return &m
			}
		}
		Fail("no live Machine of instance type " + t)
		return nil
	}

	It("removes the marked Machine from the smaller set of a rollout paused half-way, and no other", func() {
		md := builder.MachineDeployment(ns, "pool", 4).WithRollingUpdate("2", "0").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("4/4/4/4"))
		// The new template's Machines never become available (the provider refuses them), so the
		// rollout stops at the surge: 4 old, 2 new. Then it is paused.
		setInstanceType(md, "unknown-type")
		Eventually(setReplicas(ns)).Should(Equal(map[string]int32{"small": 4, "unknown-type": 2}))
		Eventually(func() int { return len(liveOf("unknown-type")()) }).Should(Equal(2))
		mergePatch(md, `{"spec":{"paused":true}}`)
		oldBefore := liveOf("small")()

		// Spreading 4 -> 3 in proportion alone would take one of the 4 old Machines.
		marked := oneOf("unknown-type")
		markAndShrink(md, marked, "3")
		Eventually(gone(marked)).Should(BeTrue(), "the marked Machine is deleted")
		Consistently(func() []string { return liveOf("small")() }, "3s").Should(Equal(oldBefore), "no old Machine goes")
		Expect(liveOf("unknown-type")()).To(HaveLen(1))
		Expect(setReplicas(ns)()).To(Equal(map[string]int32{"small": 4, "unknown-type": 1}))

		By("a set still recording an earlier size (its write refused by a conflict) gets the new one, and keeps its replicas")
		// Otherwise every later reconcile would be a scaling event with nothing to spread, and the
		// rollout would never resume once unpaused (seen in the fault matrix's autoscaler scenario).
		for _, set := range sets(ns) {
			if set.Spec.Replicas != nil && *set.Spec.Replicas == 1 {
				mergePatch(&set, `{"metadata":{"annotations":{"`+machinedeployment.DesiredReplicasAnnotation+`":"4"}}}`)
			}
		}
		Eventually(func() []string {
			var desired []string
			for _, set := range sets(ns) {
				desired = append(desired, set.Annotations[machinedeployment.DesiredReplicasAnnotation])
			}
			return desired
		}).Should(Equal([]string{"3", "3"}))
		Expect(setReplicas(ns)()).To(Equal(map[string]int32{"small": 4, "unknown-type": 1}))
	})

	It("removes the marked Machine from the old set of an OnDelete rollout, and no new one", func() {
		md := builder.MachineDeployment(ns, "pool", 3).WithStrategy(v1beta1.OnDeleteStrategy).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		setInstanceType(md, "large")
		Eventually(func() int { return len(sets(ns)) }).Should(Equal(2))
		// Two old Machines are deleted by hand: the new set replaces them (old 1, new 2).
		old := liveOf("small")()
		for _, name := range old[:2] {
			Expect(k8s.Delete(ctx, &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 1, "large": 2}))
		newBefore := liveOf("large")()

		// Without the mark the new set would shrink: the old sets keep what they have.
		marked := oneOf("small")
		markAndShrink(md, marked, "2")
		Eventually(gone(marked)).Should(BeTrue(), "the marked old Machine is deleted")
		Consistently(func() []string { return liveOf("large")() }, "3s").Should(Equal(newBefore), "no new Machine goes")
	})

	It("labels its MachineSets with the autoscaler's deployment-name and revision keys, equal to its own, through a rollout and a rollback", func() {
		md := builder.MachineDeployment(ns, "pool", 1).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("1/1/1/1"))
		// autoscalerKeys returns, per instance type of a set's template, "<autoscaler's
		// deployment-name label> <autoscaler's revision annotation>/<our revision annotation>".
		autoscalerKeys := func() map[string]string {
			out := map[string]string{}
			for _, s := range sets(ns) {
				m := v1beta1.Machine{Spec: s.Spec.Template.Spec}
				out[instanceType(&m)] = s.Labels[v1beta1.ClusterAPIDeploymentNameLabel] + " " +
					s.Annotations[v1beta1.ClusterAPIRevisionAnnotation] + "/" + s.Annotations[v1beta1.RevisionAnnotation]
			}
			return out
		}
		Expect(autoscalerKeys()).To(Equal(map[string]string{"small": "pool 1/1"}))

		setInstanceType(md, "large")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 1}))
		Eventually(autoscalerKeys).Should(Equal(map[string]string{"small": "pool 1/1", "large": "pool 2/2"}))

		By("a rollback makes the old set the newest revision, in both keys")
		setInstanceType(md, "small")
		Eventually(autoscalerKeys).Should(Equal(map[string]string{"small": "pool 3/3", "large": "pool 2/2"}))

		By("keys removed by hand come back, also while the rollout is paused")
		mergePatch(md, `{"spec":{"paused":true}}`)
		for _, s := range sets(ns) {
			mergePatch(&s, `{"metadata":{"labels":{"`+v1beta1.ClusterAPIDeploymentNameLabel+`":null},"annotations":{"`+v1beta1.ClusterAPIRevisionAnnotation+`":null}}}`)
		}
		Eventually(autoscalerKeys).Should(Equal(map[string]string{"small": "pool 3/3", "large": "pool 2/2"}))
	})

	DescribeTable("leaves a deployment paused by an annotation alone, and resumes once it is removed",
		func(annotation string) {
			md := builder.MachineDeployment(ns, "pool", 1).WithAnnotations(map[string]string{annotation: ""}).Build()
			Expect(k8s.Create(ctx, md)).To(Succeed())
			Consistently(func() []string { return setNames(ns) }, "3s").Should(BeEmpty(), "no MachineSet while paused")
			Expect(getMD(md).Finalizers).To(BeEmpty())

			mergePatch(md, `{"metadata":{"annotations":{"`+annotation+`":null}}}`)
			Eventually(status(md)).Should(Equal("1/1/1/1"))
		},
		Entry("machine.machineapi.dev/paused", v1beta1.PausedAnnotation),
		Entry("cluster.x-k8s.io/paused, which the cluster-autoscaler honours too", v1beta1.ClusterAPIPausedAnnotation),
	)
})

// gone reports whether obj no longer exists.
func gone(obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
	}
}
