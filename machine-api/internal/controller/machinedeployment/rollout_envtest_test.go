package machinedeployment_test

import (
	"encoding/json"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinedeployment"
	"machineapi.dev/machine-api/internal/test/builder"
)

var _ = Describe("A MachineDeployment rollout", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("RollingUpdate with maxSurge 1, maxUnavailable 0 replaces 6 Machines without ever having fewer than 6 ready", func() {
		md := builder.MachineDeployment(ns, "web", 6).WithRollingUpdate("1", "0").Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("6/6/6/6"))
		Expect(sets(ns)).To(HaveLen(1))
		first := sets(ns)[0]
		Expect(first.Name).To(MatchRegexp(`^web-[a-z0-9]{10}$`))
		Expect(first.Annotations).To(HaveKeyWithValue(v1beta1.RevisionAnnotation, "1"))
		Expect(first.Labels).To(HaveKeyWithValue(v1beta1.DeploymentNameLabel, "web"))

		s := sample(ns)
		setInstanceType(md, "large")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 6}))
		Eventually(func() int { return len(machines(ns)) }).Should(Equal(6), "the old Machines finish deleting")
		Eventually(status(md)).Should(Equal("6/6/6/6"))
		minReady, maxLive, _ := s.Stop()
		Expect(minReady).To(BeNumerically(">=", 6), "never fewer than replicas - maxUnavailable ready Machines")
		Expect(maxLive).To(BeNumerically("<=", 7), "never more than replicas + maxSurge Machines")

		Expect(setNames(ns)).To(HaveLen(2), "revisionHistoryLimit 1 keeps the old, empty set")
		Expect(setReplicas(ns)()).To(Equal(map[string]int32{"small": 0, "large": 6}))
		Expect(getMD(md).Annotations).To(HaveKeyWithValue(v1beta1.RevisionAnnotation, "2"))
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
		Expect(condition(md, v1beta1.AvailableCondition)()).To(Equal("True/" + machinedeployment.ReasonMinimumAvailable))

		By("a third template prunes the oldest empty set")
		setInstanceType(md, "medium")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"medium": 6}))
		Eventually(func() []string { return setNames(ns) }).Should(HaveLen(2))
		Expect(setNames(ns)).NotTo(ContainElement(first.Name))
	})

	It("Recreate deletes every old Machine before creating a new one", func() {
		md := builder.MachineDeployment(ns, "batch", 3).WithStrategy(v1beta1.RecreateStrategy).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))

		s := sample(ns)
		setInstanceType(md, "large")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 3}))
		_, maxLive, mixed := s.Stop()
		Expect(mixed).To(BeFalse(), "old and new Machines never existed at the same time")
		Expect(maxLive).To(Equal(3))
		Eventually(status(md)).Should(Equal("3/3/3/3"))
	})

	It("OnDelete replaces a Machine only when a user deletes it", func() {
		md := builder.MachineDeployment(ns, "db", 3).WithStrategy(v1beta1.OnDeleteStrategy).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))

		setInstanceType(md, "large")
		Eventually(func() []string { return setNames(ns) }).Should(HaveLen(2), "the new MachineSet exists")
		Consistently(liveByType(ns), "2s").Should(Equal(map[string]int{"small": 3}), "nothing is replaced on its own")

		victim := machines(ns)[0]
		Expect(k8s.Delete(ctx, &victim)).To(Succeed())
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 2, "large": 1}))
		Consistently(liveByType(ns), "2s").Should(Equal(map[string]int{"small": 2, "large": 1}), "the old set does not replace it too")
		Eventually(status(md)).Should(Equal("3/1/3/3"))
	})

	It("pauses rollouts but not scaling, and resumes", func() {
		md := builder.MachineDeployment(ns, "api", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))

		mergePatch(md, `{"spec":{"paused":true,"template":{"spec":{"providerSpec":{"value":{"instanceType":"large"}}}}}}`)
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("Unknown/" + machinedeployment.ReasonPaused))
		mergePatch(md, `{"spec":{"replicas":3}}`)
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 3}), "a paused deployment scales")
		Consistently(func() []string { return setNames(ns) }, "2s").Should(HaveLen(1), "no rollout while paused")

		mergePatch(md, `{"spec":{"paused":false}}`)
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 3}))
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
	})

	It("rolls back by restoring an old MachineSet's template spec, reusing that set", func() {
		md := builder.MachineDeployment(ns, "app", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		original := sets(ns)[0]

		setInstanceType(md, "large")
		Eventually(readyByType(ns)).Should(Equal(map[string]int{"large": 2}))
		Eventually(func() string { return getMD(md).Annotations[v1beta1.RevisionAnnotation] }).Should(Equal("2"))

		// The documented rollback: copy spec.template.spec of the old revision's MachineSet,
		//   kubectl patch md/app --type json -p '[{"op":"replace","path":"/spec/template/spec","value":'"$(kubectl get ms/<old> -o jsonpath='{.spec.template.spec}')"'}]'
		old := &v1beta1.MachineSet{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&original), old)).To(Succeed())
		spec, err := json.Marshal(old.Spec.Template.Spec)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8s.Patch(ctx, md, client.RawPatch(types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/template/spec","value":`+string(spec)+`}]`)))).To(Succeed())

		Eventually(readyByType(ns)).Should(Equal(map[string]int{"small": 2}))
		Expect(setNames(ns)).To(HaveLen(2), "the old set is reused, no third one is created")
		Eventually(func() map[string]string { return getMD(md).Annotations }).Should(HaveKeyWithValue(v1beta1.RevisionAnnotation, "3"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&original), old)).To(Succeed())
		Expect(old.Annotations).To(HaveKeyWithValue(v1beta1.RevisionAnnotation, "3"), "the restored set becomes the newest revision")
		Expect(*old.Spec.Replicas).To(Equal(int32(2)))
	})

	It("rolls out a providerSpec change but updates node labels in place, reaching every Node within seconds", func() {
		md := builder.MachineDeployment(ns, "edge", 3).WithNodeLabels(map[string]string{"example.com/role": "web", "example.com/team": "a"}).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("3/3/3/3"))
		names := live(ns)

		mergePatch(md, `{"spec":{"template":{"spec":{"metadata":{"labels":{"example.com/role":"db","example.com/team":null}}}}}}`)
		Eventually(func(g Gomega) {
			for _, m := range machines(ns) {
				node := nodeOf(&m)
				g.Expect(node).NotTo(BeNil())
				g.Expect(node.Labels).To(HaveKeyWithValue("example.com/role", "db"))
				g.Expect(node.Labels).NotTo(HaveKey("example.com/team"))
			}
		}, 10*time.Second).Should(Succeed())
		Expect(setNames(ns)).To(HaveLen(1), "a metadata change creates no MachineSet")
		Expect(live(ns)).To(Equal(names), "and replaces no Machine")
		Expect(sets(ns)[0].Spec.Template.Spec.Metadata.Labels).To(Equal(map[string]string{"example.com/role": "db"}))
	})

	It("taints the Nodes of the old set while a rollout is in progress, so rescheduled pods prefer new Nodes, and untaints them when it is undone", func() {
		md := builder.MachineDeployment(ns, "taint", 2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("2/2/2/2"))
		outdated := func(g Gomega) []bool {
			var out []bool
			for _, m := range machines(ns) {
				if instanceType(&m) != "small" || !m.DeletionTimestamp.IsZero() {
					continue
				}
				node := nodeOf(&m)
				g.Expect(node).NotTo(BeNil())
				onMachine := slices.ContainsFunc(m.Spec.Taints, func(t v1beta1.MachineTaint) bool { return t.Key == v1beta1.OutdatedRevisionTaintKey })
				onNode := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
					return t.Key == v1beta1.OutdatedRevisionTaintKey && t.Effect == corev1.TaintEffectPreferNoSchedule
				})
				g.Expect(onNode).To(Equal(onMachine), "Machine %s and its Node agree", m.Name)
				out = append(out, onNode)
			}
			return out
		}
		Expect(outdated(Default)).To(Equal([]bool{false, false}), "no rollout, no taint")

		By("a rollout that cannot finish (the provider rejects the new template): the old Nodes are tainted")
		setInstanceType(md, "unknown-type")
		Eventually(outdated).Should(Equal([]bool{true, true}))

		By("undone: the old set is current again, and its Nodes lose the taint")
		setInstanceType(md, "small")
		Eventually(outdated).Should(Equal([]bool{false, false}))
		Eventually(status(md)).Should(Equal("2/2/2/2"))
	})

	It("gives up on a stuck rollout after progressDeadlineSeconds", func() {
		md := builder.MachineDeployment(ns, "stuck", 1).WithProgressDeadlineSeconds(2).Build()
		Expect(k8s.Create(ctx, md)).To(Succeed())
		Eventually(status(md)).Should(Equal("1/1/1/1"))
		setInstanceType(md, "unknown-type") // the provider rejects it: the new Machine fails
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("False/" + machinedeployment.ReasonDeadlineExceeded))
		Expect(readyByType(ns)()).To(Equal(map[string]int{"small": 1}), "maxUnavailable 0 keeps the old Machine")
		setInstanceType(md, "small")
		Eventually(condition(md, v1beta1.ProgressingCondition)).Should(Equal("True/" + machinedeployment.ReasonNewSetAvailable))
	})
})
