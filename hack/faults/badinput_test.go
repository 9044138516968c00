package faults_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/faults"
	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// badCreate is one malformed object sent to the running system: it must be refused with a
// message naming field, and nothing of it stored.
type badCreate struct {
	name  string
	kind  string
	edit  func(obj map[string]any)
	field string
	// strict sends the create with fieldValidation=Strict (kubectl's default), so that unknown
	// fields are refused rather than dropped.
	strict bool
}

// Scenario 7: bad input sent to the running system. The API server's schema (CRD validation,
// CEL rules, the lifecycle-hooks admission policy) refuses malformed objects before anything is
// stored, naming the field; input the schema cannot judge (what the provider accepts, what a Node
// accepts, sizes) is accepted and must be handled with a condition that says what to change,
// without crashing the manager or spreading. machine-api/internal/apivalidation tests each schema
// rule on its own; here the same kinds of mistakes, and worse ones, hit a live manager.
var _ = Describe("Scenario 7: bad input sent to the running system", func() {
	var s *Scenario

	BeforeEach(func() {
		s = NewScenario("bad-input")
		s.Start(s.MachineManager())
	})
	AfterEach(func() { s.Verify() })

	It("refuses malformed objects with a message naming the field, storing nothing", func() {
		cases := badCreates()
		Expect(len(cases)).To(BeNumerically(">=", 40))
		var bad []string
		for i, c := range cases {
			obj := baseObject(c.kind, s.NS, fmt.Sprintf("bad-%02d", i))
			c.edit(obj.Object)
			opts := []client.CreateOption{}
			if c.strict {
				opts = append(opts, client.FieldValidation(metav1.FieldValidationStrict))
			}
			err := k8s.Create(ctx, obj, opts...)
			switch {
			case err == nil:
				bad = append(bad, fmt.Sprintf("%s: accepted", c.name))
			case !strings.Contains(err.Error(), c.field):
				bad = append(bad, fmt.Sprintf("%s: refused without naming %s: %v", c.name, c.field, truncated(err)))
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
				bad = append(bad, fmt.Sprintf("%s: stored anyway (get: %v)", c.name, err))
				_ = k8s.Delete(ctx, got)
			}
			logf("%-70s %s", c.name, truncated(err))
		}
		Expect(bad).To(BeEmpty())
		Expect(s.Managers[0].Exited()).To(Succeed())
	})

	It("refuses bad changes to stored objects: immutable fields, hooks added while deleting, a bad status", func() {
		m := faults.Machine(s.NS, "hooked")
		m.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: "hold", Owner: "faults"}}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
			return m.Spec.ProviderID
		}).ShouldNot(BeEmpty())
		ms := faults.MachineSet(s.NS, "immutable", 0)
		Expect(k8s.Create(ctx, ms)).To(Succeed())

		// The controllers keep writing status, so "nothing stored" is judged on the spec: its
		// generation does not move.
		refused := func(obj client.Object, patch, field string) {
			GinkgoHelper()
			before := obj.DeepCopyObject().(client.Object)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(before), before)).To(Succeed())
			err := k8s.Patch(ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(patch)))
			Expect(err).To(HaveOccurred(), "patch %s accepted", patch)
			Expect(err.Error()).To(ContainSubstring(field))
			after := obj.DeepCopyObject().(client.Object)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(after), after)).To(Succeed())
			Expect(after.GetGeneration()).To(Equal(before.GetGeneration()), "nothing stored")
			logf("%-70s %s", patch, truncated(err))
		}
		refused(m, `{"spec":{"providerID":"sim:///somebody-else"}}`, "providerID is immutable")
		refused(ms, `{"spec":{"selector":{"matchLabels":{"faults.machineapi.dev/pool":"other"}}}}`, "selector is immutable")
		refused(ms, `{"spec":{"replicas":-5}}`, "spec.replicas")
		refused(ms, `{"spec":{"template":{"spec":{"providerID":"sim:///x"}}}}`, "spec.template.spec.providerID")

		Expect(k8s.Delete(ctx, m)).To(Succeed())
		refused(m, `{"spec":{"lifecycleHooks":{"preDrain":[{"name":"hold","owner":"faults"},{"name":"late","owner":"faults"}]}}}`, "spec.lifecycleHooks.preDrain")
		refused(m, `{"spec":{"lifecycleHooks":{"preTerminate":[{"name":"late","owner":"faults"}]}}}`, "spec.lifecycleHooks.preTerminate")
		// A bad status: only the status subresource takes it, and the schema still applies.
		err := k8s.Status().Patch(ctx, m.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"status":{"phase":"Exploded"}}`)))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("status.phase"))
		// Releasing the hook lets the deletion finish.
		Expect(k8s.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"lifecycleHooks":{"preDrain":null}}}`)))).To(Succeed())
		Eventually(Gone(m)).Should(BeTrue())
	})

	It("handles what the schema cannot judge with a condition, and never crashes", func() {
		By("a Machine whose providerSpec the provider rejects")
		rejected := faults.Machine(s.NS, "rejected")
		rejected.Spec.ProviderSpec.Value.Raw = []byte(`{"instanceType":"huge"}`)
		Expect(k8s.Create(ctx, rejected)).To(Succeed())
		Eventually(failure(rejected)).Should(And(HavePrefix("InvalidConfiguration: "), ContainSubstring("providerSpec.value.instanceType")))

		By("a hostile providerSpec: 1 MiB of junk (stored) and 3 MiB (over the API server's request limit)")
		junk := faults.Machine(s.NS, "junk")
		junk.Spec.ProviderSpec.Value.Raw = fmt.Appendf(nil, `{"junk":%q}`, strings.Repeat("x", 1<<20))
		Expect(k8s.Create(ctx, junk)).To(Succeed())
		Eventually(failure(junk)).Should(And(HavePrefix("InvalidConfiguration: "), ContainSubstring("providerSpec.value")))
		huge := faults.Machine(s.NS, "huge")
		huge.Spec.ProviderSpec.Value.Raw = fmt.Appendf(nil, `{"junk":%q}`, strings.Repeat("x", 3<<20))
		err := k8s.Create(ctx, huge)
		Expect(err).To(HaveOccurred())
		logf("3 MiB providerSpec: %s", truncated(err))
		Expect(Gone(huge)()).To(BeTrue())

		By("deeply nested JSON in providerSpec")
		deep := faults.Machine(s.NS, "deep")
		deep.Spec.ProviderSpec.Value.Raw = []byte(strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 500))
		err = k8s.Create(ctx, deep)
		logf("500-deep providerSpec: %s", truncated(err))
		if err == nil {
			Eventually(failure(deep)).Should(HavePrefix("InvalidConfiguration: "))
		}
		// Sent as raw bytes: Go's own encoder would refuse to marshal it.
		body := fmt.Appendf(nil, `{"apiVersion":"machine.machineapi.dev/v1beta1","kind":"Machine","metadata":{"name":"deeper","namespace":%q},"spec":{"providerSpec":{"value":{"a":%s1%s}}}}`,
			s.NS, strings.Repeat(`[`, 20000), strings.Repeat(`]`, 20000))
		err = clientset.CoreV1().RESTClient().Post().AbsPath("/apis/machine.machineapi.dev/v1beta1/namespaces", s.NS, "machines").
			SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		Expect(err).To(HaveOccurred(), "20000-deep JSON")
		logf("20000-deep providerSpec: %s", truncated(err))
		Expect(Gone(&v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: "deeper"}})()).To(BeTrue())

		By("a MachineSet whose template the provider rejects: its Machines fail, no more are made")
		ms := faults.MachineSet(s.NS, "rejected", 3)
		ms.Spec.Template.Spec.ProviderSpec.Value.Raw = []byte(`{"instanceType":"huge"}`)
		Expect(k8s.Create(ctx, ms)).To(Succeed())
		s.Expect.NotReadySets["rejected"] = true
		Eventually(func() int { return countFailed(s.NS, "rejected") }).Should(Equal(3))
		Consistently(func() int { return countMachines(s.NS, "rejected") }, 5*time.Second).Should(Equal(3), "a failing template makes no Machine storm")

		By("a Machine naming a MachineClass that does not exist, until it is created")
		classless := faults.Machine(s.NS, "classless")
		classless.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: "later"}}
		Expect(k8s.Create(ctx, classless)).To(Succeed())
		Eventually(condition(classless, v1beta1.InstanceProvisionedCondition)).Should(And(HavePrefix("False/MachineClassNotFound"), ContainSubstring("spec.providerSpec.machineClass.name")))
		class := &v1beta1.MachineClass{ObjectMeta: metav1.ObjectMeta{Namespace: s.NS, Name: "later"}}
		class.Spec.ProviderSpec.Raw = []byte(`{"instanceType":"small"}`)
		Expect(k8s.Create(ctx, class)).To(Succeed())
		Eventually(phase(classless)).WithTimeout(time.Minute).Should(Equal(v1beta1.MachinePhaseRunning))

		By("the MachineClass deleted while in use: it stays until its Machine is gone")
		Expect(k8s.Delete(ctx, class)).To(Succeed())
		Consistently(func() bool { return Gone(class)() }, 3*time.Second).Should(BeFalse(), "a class in use is kept")
		Expect(phase(classless)()).To(Equal(v1beta1.MachinePhaseRunning))
		Expect(k8s.Delete(ctx, classless)).To(Succeed())
		Eventually(Gone(class)).Should(BeTrue(), "the class goes with its last Machine")

		By("a health check whose remediation template does not exist")
		mhc := faults.HealthCheck(s.NS, "external", "nothing-matches", 5, 60, "40%")
		mhc.Spec.RemediationTemplate = &v1beta1.RemediationTemplateReference{APIVersion: "remediation.example.com/v1", Kind: "RebootTemplate", Name: "missing"}
		Expect(k8s.Create(ctx, mhc)).To(Succeed())
		Expect(s.Managers[0].Exited()).To(Succeed())
	})

	It("gives Machines with names at the length limits their Nodes", func() {
		long := faults.Machine(s.NS, strings.Repeat("n", 253))
		Expect(k8s.Create(ctx, long)).To(Succeed())
		longSet := faults.MachineSet(s.NS, strings.Repeat("s", 63), 1)
		Expect(k8s.Create(ctx, longSet)).To(Succeed())
		longMD := faults.MachineDeployment(s.NS, strings.Repeat("d", 52), 1)
		Expect(k8s.Create(ctx, longMD)).To(Succeed())
		Eventually(phase(long)).WithTimeout(time.Minute).Should(Equal(v1beta1.MachinePhaseRunning), "a Machine with a 253-character name")
		s.WaitRunning(longSet.Name, 1, time.Minute)
		s.WaitRunning(longMD.Name, 1, time.Minute)
	})

	It("survives a MachineSet asked for a billion replicas, and cleans up after it", func() {
		ms := faults.MachineSet(s.NS, "billion", 0)
		// Instances that never boot: only the Machines and instances count.
		ms.Spec.Template.Metadata.Annotations = map[string]string{"sim.machineapi.dev/never-boot": ""}
		Expect(k8s.Create(ctx, ms)).To(Succeed())
		err := k8s.Patch(ctx, ms, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1000000000}}`)))
		if err != nil {
			logf("a billion replicas refused: %s", truncated(err))
			Expect(err.Error()).To(ContainSubstring("spec.replicas"))
			return
		}
		time.Sleep(3 * time.Second)
		Scale(ms, 0)
		made := len(tracker.Machines(s.NS))
		logf("a billion replicas accepted: %d Machines made in 3s before scaling back to 0", made)
		AddReportEntry("billion-replicas", fmt.Sprintf("%d Machines in 3s", made))
		Eventually(func() int { live, _ := tracker.Live(s.NS); return live }).WithTimeout(3 * time.Minute).Should(BeZero())
		Expect(s.Managers[0].Exited()).To(Succeed())
	})
})

// baseObject returns a valid object of kind as an unstructured map, to be spoiled by a case.
func baseObject(kind, ns, name string) *unstructured.Unstructured {
	tmpl := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{faults.PoolLabel: name}},
		"spec":     map[string]any{"providerSpec": map[string]any{"value": map[string]any{"instanceType": "small"}}},
	}
	selector := map[string]any{"matchLabels": map[string]any{faults.PoolLabel: name}}
	var spec map[string]any
	switch kind {
	case "Machine":
		spec = map[string]any{"providerSpec": map[string]any{"value": map[string]any{"instanceType": "small"}}}
	case "MachineSet":
		spec = map[string]any{"replicas": int64(0), "selector": selector, "template": tmpl}
	case "MachineDeployment":
		spec = map[string]any{"replicas": int64(0), "selector": selector, "template": tmpl}
	case "MachineHealthCheck":
		spec = map[string]any{"selector": selector, "maxUnhealthy": "40%",
			"unhealthyConditions": []any{map[string]any{"type": "Ready", "status": "False", "timeoutSeconds": int64(60)}}}
	case "MachineClass":
		spec = map[string]any{"providerSpec": map[string]any{"instanceType": "small"}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	return u
}

// set returns an edit that sets the value at a dotted path ("spec.template.spec.taints"),
// creating maps on the way.
func set(path string, value any) func(map[string]any) {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = value
	}
}

// del returns an edit that removes the value at a dotted path.
func del(path string) func(map[string]any) {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				return
			}
			m = next
		}
		delete(m, keys[len(keys)-1])
	}
}

func both(edits ...func(map[string]any)) func(map[string]any) {
	return func(obj map[string]any) {
		for _, e := range edits {
			e(obj)
		}
	}
}

func manyTaints(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"key": fmt.Sprintf("k%d", i), "effect": "NoSchedule"}
	}
	return out
}

func manyHooks(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"name": fmt.Sprintf("h%d", i), "owner": "faults"}
	}
	return out
}

func manyLabels(n int) map[string]any {
	out := map[string]any{}
	for i := range n {
		out[fmt.Sprintf("l%d", i)] = "v"
	}
	return out
}

// badCreates are the malformed objects: wrong types, conflicting fields, out-of-range and absurd
// values, unknown fields, bad names. Each names the field its message must carry.
func badCreates() []badCreate {
	return []badCreate{
		// Machine
		{"Machine: providerSpec with both value and machineClass", "Machine", set("spec.providerSpec.machineClass", map[string]any{"name": "c"}), "spec.providerSpec", false},
		{"Machine: providerSpec with neither", "Machine", set("spec.providerSpec", map[string]any{}), "spec.providerSpec", false},
		{"Machine: no providerSpec at all", "Machine", del("spec.providerSpec"), "spec.providerSpec", false},
		{"Machine: providerSpec.value a string", "Machine", set("spec.providerSpec.value", "instanceType=small"), "spec.providerSpec.value", false},
		{"Machine: providerSpec.value an array", "Machine", set("spec.providerSpec.value", []any{"small"}), "spec.providerSpec.value", false},
		{"Machine: providerID a number", "Machine", set("spec.providerID", int64(42)), "spec.providerID", false},
		{"Machine: providerID of 600 characters", "Machine", set("spec.providerID", "sim:///"+strings.Repeat("x", 600)), "spec.providerID", false},
		{"Machine: taint with an unknown effect", "Machine", set("spec.taints", []any{map[string]any{"key": "k", "effect": "Sometimes"}}), "spec.taints", false},
		{"Machine: taint without a key", "Machine", set("spec.taints", []any{map[string]any{"key": "", "effect": "NoSchedule"}}), "spec.taints", false},
		{"Machine: 65 taints", "Machine", set("spec.taints", manyTaints(65)), "spec.taints", false},
		{"Machine: taints an object, not a list", "Machine", set("spec.taints", map[string]any{"key": "k"}), "spec.taints", false},
		{"Machine: 33 preDrain hooks", "Machine", set("spec.lifecycleHooks.preDrain", manyHooks(33)), "spec.lifecycleHooks.preDrain", false},
		{"Machine: two preTerminate hooks of one name", "Machine", set("spec.lifecycleHooks.preTerminate", []any{map[string]any{"name": "a", "owner": "x"}, map[string]any{"name": "a", "owner": "y"}}), "spec.lifecycleHooks.preTerminate", false},
		{"Machine: a hook without an owner", "Machine", set("spec.lifecycleHooks.preDrain", []any{map[string]any{"name": "a"}}), "spec.lifecycleHooks.preDrain[0].owner", false},
		{"Machine: a hook name of 300 characters", "Machine", set("spec.lifecycleHooks.preDrain", []any{map[string]any{"name": strings.Repeat("h", 300), "owner": "x"}}), "spec.lifecycleHooks.preDrain[0].name", false},
		{"Machine: negative nodeDrainTimeoutSeconds", "Machine", set("spec.deletion.nodeDrainTimeoutSeconds", int64(-1)), "spec.deletion.nodeDrainTimeoutSeconds", false},
		{"Machine: nodeDrainTimeoutSeconds a string", "Machine", set("spec.deletion.nodeDrainTimeoutSeconds", "ten"), "spec.deletion.nodeDrainTimeoutSeconds", false},
		{"Machine: nodeDeletionTimeoutSeconds a fraction", "Machine", set("spec.deletion.nodeDeletionTimeoutSeconds", 1.5), "spec.deletion.nodeDeletionTimeoutSeconds", false},
		{"Machine: 257 Node labels", "Machine", set("spec.metadata.labels", manyLabels(257)), "spec.metadata.labels", false},
		{"Machine: a Node label value that is a number", "Machine", set("spec.metadata.labels", map[string]any{"tier": int64(1)}), "spec.metadata.labels.tier", false},
		{"Machine: a kubelet version of 100 characters", "Machine", set("spec.versions.kubelet", strings.Repeat("1", 100)), "spec.versions.kubelet", false},
		{"Machine: spec a string", "Machine", set("spec", "everything"), "spec", false},
		{"Machine: an unknown spec field (strict)", "Machine", set("spec.instanceType", "small"), `unknown field "spec.instanceType"`, true},
		{"Machine: an uppercase name", "Machine", set("metadata.name", "Bad-Name"), "metadata.name", false},
		{"Machine: a name of 254 characters", "Machine", set("metadata.name", strings.Repeat("n", 254)), "metadata.name", false},
		// MachineSet
		{"MachineSet: negative replicas", "MachineSet", set("spec.replicas", int64(-1)), "spec.replicas", false},
		{"MachineSet: replicas a string", "MachineSet", set("spec.replicas", "three"), "spec.replicas", false},
		{"MachineSet: replicas beyond int32", "MachineSet", set("spec.replicas", int64(1)<<40), "spec.replicas", false},
		{"MachineSet: selector the template does not match", "MachineSet", set("spec.selector.matchLabels", map[string]any{faults.PoolLabel: "other"}), "spec.selector", false},
		{"MachineSet: empty selector", "MachineSet", set("spec.selector", map[string]any{}), "spec.selector", false},
		{"MachineSet: selector operator that does not exist", "MachineSet", set("spec.selector.matchExpressions", []any{map[string]any{"key": "k", "operator": "Near"}}), "spec.selector.matchExpressions[0].operator", false},
		{"MachineSet: providerID in the template", "MachineSet", set("spec.template.spec.providerID", "sim:///x"), "spec.template.spec.providerID", false},
		{"MachineSet: unknown deletePolicy", "MachineSet", set("spec.deletePolicy", "Loudest"), "spec.deletePolicy", false},
		{"MachineSet: a name of 64 characters", "MachineSet", set("metadata.name", strings.Repeat("s", 64)), "metadata.name", false},
		{"MachineSet: template without providerSpec", "MachineSet", del("spec.template.spec.providerSpec"), "spec.template.spec.providerSpec", false},
		// MachineDeployment
		{"MachineDeployment: unknown strategy", "MachineDeployment", set("spec.strategy.type", "BigBang"), "spec.strategy.type", false},
		{"MachineDeployment: rollingUpdate with Recreate", "MachineDeployment", set("spec.strategy", map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{"maxSurge": int64(1)}}), "spec.strategy.rollingUpdate", false},
		{"MachineDeployment: maxSurge and maxUnavailable both 0", "MachineDeployment", set("spec.strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(0), "maxUnavailable": int64(0)}}), "spec.strategy.rollingUpdate", false},
		{"MachineDeployment: maxSurge 150%", "MachineDeployment", set("spec.strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "150%"}}), "spec.strategy.rollingUpdate.maxSurge", false},
		{"MachineDeployment: a name of 53 characters", "MachineDeployment", set("metadata.name", strings.Repeat("d", 53)), "metadata.name", false},
		{"MachineDeployment: progressDeadlineSeconds 0", "MachineDeployment", set("spec.progressDeadlineSeconds", int64(0)), "spec.progressDeadlineSeconds", false},
		{"MachineDeployment: replicas a boolean", "MachineDeployment", set("spec.replicas", true), "spec.replicas", false},
		// MachineHealthCheck
		{"MachineHealthCheck: maxUnhealthy and unhealthyRange", "MachineHealthCheck", set("spec.unhealthyRange", "[1-3]"), "spec.unhealthyRange", false},
		{"MachineHealthCheck: maxUnhealthy 40 as a string", "MachineHealthCheck", set("spec.maxUnhealthy", "40"), "spec.maxUnhealthy", false},
		{"MachineHealthCheck: unhealthyRange min above max", "MachineHealthCheck", both(del("spec.maxUnhealthy"), set("spec.unhealthyRange", "[5-2]")), "spec.unhealthyRange", false},
		{"MachineHealthCheck: a condition status Maybe", "MachineHealthCheck", set("spec.unhealthyConditions", []any{map[string]any{"type": "Ready", "status": "Maybe", "timeoutSeconds": int64(5)}}), "spec.unhealthyConditions[0].status", false},
		{"MachineHealthCheck: maxInFlight 0", "MachineHealthCheck", set("spec.maxInFlight", int64(0)), "spec.maxInFlight", false},
		{"MachineHealthCheck: no selector", "MachineHealthCheck", del("spec.selector"), "spec.selector", false},
		// MachineClass
		{"MachineClass: no providerSpec", "MachineClass", del("spec.providerSpec"), "spec.providerSpec", false},
		{"MachineClass: capacity that is not a quantity", "MachineClass", set("spec.nodeTemplate", map[string]any{"capacity": map[string]any{"cpu": "lots"}}), "spec.nodeTemplate.capacity", false},
	}
}

// failure returns a Machine's "failureReason: failureMessage", or its phase while it has none.
func failure(m *v1beta1.Machine) func() string {
	return func() string {
		got := &v1beta1.Machine{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err.Error()
		}
		if got.Status.FailureReason == nil {
			return "phase " + string(got.Status.Phase)
		}
		return string(*got.Status.FailureReason) + ": " + ptr.Deref(got.Status.FailureMessage, "")
	}
}

// condition returns a Machine condition as "Status/Reason: message".
func condition(m *v1beta1.Machine, typ string) func() string {
	return func() string {
		got := &v1beta1.Machine{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
	}
}

func phase(m *v1beta1.Machine) func() v1beta1.MachinePhase {
	return func() v1beta1.MachinePhase {
		got := &v1beta1.Machine{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(m), got); err != nil {
			return ""
		}
		return got.Status.Phase
	}
}

func countMachines(ns, pool string) int {
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{faults.PoolLabel: pool})).To(Succeed())
	return len(list.Items)
}

func countFailed(ns, pool string) int {
	list := &v1beta1.MachineList{}
	Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{faults.PoolLabel: pool})).To(Succeed())
	n := 0
	for _, m := range list.Items {
		if m.Status.Phase == v1beta1.MachinePhaseFailed {
			n++
		}
	}
	return n
}

// truncated shortens an error for a log line.
func truncated(err error) string {
	if err == nil {
		return "accepted"
	}
	msg := err.Error()
	if len(msg) > 240 {
		msg = msg[:240] + "..."
	}
	return msg
}
