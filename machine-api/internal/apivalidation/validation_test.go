package apivalidation

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "validation-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

type badCase struct {
	kind    string
	mutate  func(obj map[string]any)
	message string // what the rejection must say: "<field>: <message>" or "<field>: Invalid value: <message>"
}

func badObject(kind string, mutate func(map[string]any), message string) badCase {
	return badCase{kind: kind, mutate: mutate, message: message}
}

func setTo(path string, value any) func(map[string]any) {
	return func(o map[string]any) { set(o, path, value) }
}

func remove(path string) func(map[string]any) {
	return func(o map[string]any) { del(o, path) }
}

func all(fns ...func(map[string]any)) func(map[string]any) {
	return func(o map[string]any) {
		for _, f := range fns {
			f(o)
		}
	}
}

var _ = Describe("Creating a bad object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	DescribeTable("is rejected with a message naming the field, and nothing is stored",
		func(tc badCase) {
			obj := newObject(tc.kind, ns, "bad")
			tc.mutate(obj.Object)
			err := k8s.Create(ctx, obj)
			Expect(err).To(HaveOccurred(), "the API server accepted %v", obj.Object)
			Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "want Invalid, got %v", err)
			// The API server names the field first ("spec.selector: Invalid value: ..."), then
			// for a scalar its value, then the message.
			if field, msg, ok := strings.Cut(tc.message, ": Invalid value: "); ok {
				Expect(err.Error()).To(ContainSubstring(field + ": Invalid value: "))
				Expect(err.Error()).To(ContainSubstring(msg))
			} else {
				Expect(err.Error()).To(ContainSubstring(tc.message))
			}

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(obj.GroupVersionKind())
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored))).To(BeTrue(), "a rejected object must not be stored")
		},
		// Machine
		Entry("Machine: providerSpec with both value and machineClass", badObject("Machine",
			setTo("spec.providerSpec.machineClass", map[string]any{"name": "small"}),
			"spec.providerSpec: Invalid value: set exactly one of value or machineClass")),
		Entry("Machine: providerSpec with neither value nor machineClass", badObject("Machine",
			setTo("spec.providerSpec", map[string]any{}),
			"spec.providerSpec: Invalid value: set exactly one of value or machineClass")),
		Entry("Machine: providerSpec missing", badObject("Machine",
			remove("spec.providerSpec"), "spec.providerSpec: Required value")),
		Entry("Machine: providerSpec.value that is not an object", badObject("Machine",
			setTo("spec.providerSpec.value", "instanceType=small"), "spec.providerSpec.value: Invalid value")),
		Entry("Machine: machineClass with an empty name", badObject("Machine",
			setTo("spec.providerSpec", map[string]any{"machineClass": map[string]any{"name": ""}}),
			"spec.providerSpec.machineClass.name")),
		Entry("Machine: taint with an invalid effect", badObject("Machine",
			setTo("spec.taints", []any{map[string]any{"key": "a", "effect": "Sometimes"}}),
			`spec.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)),
		Entry("Machine: taint with an empty key", badObject("Machine",
			setTo("spec.taints", []any{map[string]any{"key": "", "effect": "NoSchedule"}}),
			`spec.taints[0].key: Invalid value: "": spec.taints[0].key in body should be at least 1 chars long`)),
		Entry("Machine: taint with an unknown propagation", badObject("Machine",
			setTo("spec.taints", []any{map[string]any{"key": "a", "effect": "NoSchedule", "propagation": "Sometimes"}}),
			`spec.taints[0].propagation: Unsupported value: "Sometimes": supported values: "Always", "OnInitialization"`)),
		Entry("Machine: two preDrain hooks with the same name", badObject("Machine",
			setTo("spec.lifecycleHooks.preDrain", []any{
				map[string]any{"name": "backup", "owner": "a"}, map[string]any{"name": "backup", "owner": "b"}}),
			"spec.lifecycleHooks.preDrain[1]: Duplicate value")),
		Entry("Machine: two preTerminate hooks with the same name", badObject("Machine",
			setTo("spec.lifecycleHooks.preTerminate", []any{
				map[string]any{"name": "x", "owner": "a"}, map[string]any{"name": "x", "owner": "a"}}),
			"spec.lifecycleHooks.preTerminate[1]: Duplicate value")),
		Entry("Machine: a hook without an owner", badObject("Machine",
			setTo("spec.lifecycleHooks.preDrain", []any{map[string]any{"name": "backup"}}),
			"spec.lifecycleHooks.preDrain[0].owner: Required value")),
		Entry("Machine: negative nodeDrainTimeoutSeconds", badObject("Machine",
			setTo("spec.deletion.nodeDrainTimeoutSeconds", int64(-1)), "spec.deletion.nodeDrainTimeoutSeconds")),
		Entry("Machine: negative nodeVolumeDetachTimeoutSeconds", badObject("Machine",
			setTo("spec.deletion.nodeVolumeDetachTimeoutSeconds", int64(-5)), "spec.deletion.nodeVolumeDetachTimeoutSeconds")),
		Entry("Machine: negative nodeDeletionTimeoutSeconds", badObject("Machine",
			setTo("spec.deletion.nodeDeletionTimeoutSeconds", int64(-1)), "spec.deletion.nodeDeletionTimeoutSeconds")),
		Entry("Machine: negative drainDeadlineSeconds", badObject("Machine",
			setTo("spec.deletion.drainDeadlineSeconds", int64(-1)), "spec.deletion.drainDeadlineSeconds: Invalid value: -1")),
		Entry("Machine: drainDeadlineSeconds not below nodeDrainTimeoutSeconds", badObject("Machine",
			setTo("spec.deletion.drainDeadlineSeconds", int64(300)),
			"spec.deletion.drainDeadlineSeconds: Invalid value: drainDeadlineSeconds must be less than nodeDrainTimeoutSeconds")),
		Entry("MachineSet: drainDeadlineSeconds not below nodeDrainTimeoutSeconds in the template", badObject("MachineSet",
			setTo("spec.template.spec.deletion.drainDeadlineSeconds", int64(600)),
			"spec.template.spec.deletion.drainDeadlineSeconds: Invalid value: drainDeadlineSeconds must be less than nodeDrainTimeoutSeconds")),
		Entry("Machine: a timeout of the wrong type", badObject("Machine",
			setTo("spec.deletion.nodeDrainTimeoutSeconds", "5m"), "spec.deletion.nodeDrainTimeoutSeconds: Invalid value")),
		Entry("Machine: an absurdly long providerID", badObject("Machine",
			setTo("spec.providerID", "sim:///"+strings.Repeat("x", 600)), "spec.providerID: Too long")),
		Entry("Machine: a kubelet version of the wrong type", badObject("Machine",
			setTo("spec.versions.kubelet", int64(137)), "spec.versions.kubelet: Invalid value")),

		// MachineSet
		Entry("MachineSet: negative replicas", badObject("MachineSet",
			setTo("spec.replicas", int64(-1)), "spec.replicas: Invalid value: -1")),
		Entry("MachineSet: replicas of the wrong type", badObject("MachineSet",
			setTo("spec.replicas", "three"), "spec.replicas: Invalid value")),
		Entry("MachineSet: selector that does not match the template labels", badObject("MachineSet",
			setTo("spec.selector.matchLabels.pool", "other"), "spec.selector: Invalid value: matchLabels must match template.metadata.labels")),
		Entry("MachineSet: selector key missing from the template", badObject("MachineSet",
			remove("spec.template.metadata.labels"), "spec.selector: Invalid value: matchLabels must match template.metadata.labels")),
		Entry("MachineSet: selector expression the template fails", badObject("MachineSet",
			setTo("spec.selector.matchExpressions", []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"web"}}}),
			"spec.selector: Invalid value: matchExpressions must match template.metadata.labels")),
		Entry("MachineSet: empty selector", badObject("MachineSet",
			setTo("spec.selector", map[string]any{}), "spec.selector: Invalid value: must not be empty")),
		Entry("MachineSet: unknown deletePolicy", badObject("MachineSet",
			setTo("spec.deletePolicy", "Smallest"), "spec.deletePolicy: Unsupported value")),
		Entry("MachineSet: negative minReadySeconds", badObject("MachineSet",
			setTo("spec.minReadySeconds", int64(-1)), "spec.minReadySeconds")),
		Entry("MachineSet: providerID in the template", badObject("MachineSet",
			setTo("spec.template.spec.providerID", "sim:///x"), "spec.template.spec.providerID: Invalid value: must not be set in a template")),
		Entry("MachineSet: name longer than a label value", badObject("MachineSet",
			setTo("metadata.name", strings.Repeat("a", 64)), "metadata.name must be at most 63 characters")),

		// MachineDeployment
		Entry("MachineDeployment: unknown strategy type", badObject("MachineDeployment",
			setTo("spec.strategy.type", "BlueGreen"), "spec.strategy.type: Unsupported value")),
		Entry("MachineDeployment: maxSurge and maxUnavailable both 0", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(0), "maxUnavailable": int64(0)}}),
			"spec.strategy.rollingUpdate: Invalid value: maxSurge and maxUnavailable must not both be 0")),
		Entry("MachineDeployment: maxSurge and maxUnavailable both 0%", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxSurge": "0%", "maxUnavailable": "0%"}}),
			"spec.strategy.rollingUpdate: Invalid value: maxSurge and maxUnavailable must not both be 0")),
		Entry("MachineDeployment: maxSurge 0 with maxUnavailable defaulted to 0", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxSurge": int64(0)}}),
			"spec.strategy.rollingUpdate: Invalid value: maxSurge and maxUnavailable must not both be 0")),
		Entry("MachineDeployment: maxSurge above 100%", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxSurge": "150%"}}),
			"spec.strategy.rollingUpdate.maxSurge: Invalid value: must be an integer >= 0 or a percentage from 0% to 100%")),
		Entry("MachineDeployment: negative maxUnavailable", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": int64(-1)}}),
			"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: must be an integer >= 0 or a percentage from 0% to 100%")),
		Entry("MachineDeployment: maxUnavailable that is not a percentage", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": "half"}}),
			"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: must be an integer >= 0 or a percentage from 0% to 100%")),
		Entry("MachineDeployment: rollingUpdate with the Recreate strategy", badObject("MachineDeployment",
			setTo("spec.strategy", map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{"maxSurge": int64(1)}}),
			"spec.strategy.rollingUpdate: Invalid value: may only be set when type is RollingUpdate")),
		Entry("MachineDeployment: progress deadline not above minReadySeconds", badObject("MachineDeployment",
			all(setTo("spec.minReadySeconds", int64(30)), setTo("spec.progressDeadlineSeconds", int64(10))),
			"spec.progressDeadlineSeconds: Invalid value: must be greater than minReadySeconds")),
		Entry("MachineDeployment: negative revisionHistoryLimit", badObject("MachineDeployment",
			setTo("spec.revisionHistoryLimit", int64(-1)), "spec.revisionHistoryLimit")),
		Entry("MachineDeployment: negative replicas", badObject("MachineDeployment",
			setTo("spec.replicas", int64(-3)), "spec.replicas: Invalid value: -3")),
		Entry("MachineDeployment: selector that does not match the template labels", badObject("MachineDeployment",
			setTo("spec.selector.matchLabels", map[string]any{"pool": "workers", "zone": "a"}),
			"spec.selector: Invalid value: matchLabels must match template.metadata.labels")),
		Entry("MachineDeployment: name too long for its MachineSets' names", badObject("MachineDeployment",
			setTo("metadata.name", strings.Repeat("d", 53)), "metadata.name must be at most 52 characters")),
		Entry("MachineDeployment: negative machineMaxAgeSeconds", badObject("MachineDeployment",
			setTo("spec.rollout.machineMaxAgeSeconds", int64(-3600)),
			"spec.rollout.machineMaxAgeSeconds: Invalid value: -3600: spec.rollout.machineMaxAgeSeconds in body should be greater than or equal to 1")),
		Entry("MachineDeployment: rollout.after that is not a time", badObject("MachineDeployment",
			setTo("spec.rollout.after", "next tuesday"),
			`spec.rollout.after: Invalid value: "next tuesday": spec.rollout.after in body must be of type date-time`)),
		Entry("MachineDeployment: rollout.after that is a number", badObject("MachineDeployment",
			setTo("spec.rollout.after", int64(1767225600)), "spec.rollout.after: Invalid value")),
		Entry("MachineDeployment: unknown machineClassChanges", badObject("MachineDeployment",
			setTo("spec.rollout.machineClassChanges", "Sometimes"), `spec.rollout.machineClassChanges: Unsupported value: "Sometimes"`)),
		Entry("MachineDeployment: template taint with an invalid effect", badObject("MachineDeployment",
			setTo("spec.template.spec.taints", []any{map[string]any{"key": "a", "effect": "Never"}}),
			`spec.template.spec.taints[0].effect: Unsupported value: "Never"`)),

		// MachineHealthCheck
		Entry("MachineHealthCheck: unhealthyRange with a bad syntax", badObject("MachineHealthCheck",
			setTo("spec.unhealthyRange", "[3-]"), "spec.unhealthyRange in body should match")),
		Entry("MachineHealthCheck: unhealthyRange with min above max", badObject("MachineHealthCheck",
			setTo("spec.unhealthyRange", "[5-2]"), "spec.unhealthyRange: Invalid value: min must not be greater than max")),
		Entry("MachineHealthCheck: both maxUnhealthy and unhealthyRange", badObject("MachineHealthCheck",
			all(setTo("spec.unhealthyRange", "[1-3]"), setTo("spec.maxUnhealthy", "40%")),
			"spec.unhealthyRange: Invalid value: maxUnhealthy and unhealthyRange are mutually exclusive")),
		Entry("MachineHealthCheck: maxUnhealthy above 100%", badObject("MachineHealthCheck",
			setTo("spec.maxUnhealthy", "101%"), "spec.maxUnhealthy: Invalid value: must be an integer >= 0 or a percentage from 0% to 100%")),
		Entry("MachineHealthCheck: negative maxUnhealthy", badObject("MachineHealthCheck",
			setTo("spec.maxUnhealthy", int64(-2)), "spec.maxUnhealthy: Invalid value: must be an integer >= 0")),
		Entry("MachineHealthCheck: maxInFlight of 0", badObject("MachineHealthCheck",
			setTo("spec.maxInFlight", int64(0)), "spec.maxInFlight: Invalid value: must be an integer >= 1")),
		Entry("MachineHealthCheck: an unhealthy condition status that does not exist", badObject("MachineHealthCheck",
			setTo("spec.unhealthyConditions.0.status", "Maybe"), "spec.unhealthyConditions[0].status: Unsupported value")),
		Entry("MachineHealthCheck: a negative condition timeout", badObject("MachineHealthCheck",
			setTo("spec.unhealthyConditions.1.timeoutSeconds", int64(-1)), "spec.unhealthyConditions[1].timeoutSeconds")),
		Entry("MachineHealthCheck: a negative node startup timeout", badObject("MachineHealthCheck",
			setTo("spec.nodeStartupTimeoutSeconds", int64(-1)), "spec.nodeStartupTimeoutSeconds")),
		Entry("MachineHealthCheck: a negative maxRetries", badObject("MachineHealthCheck",
			setTo("spec.remediation", map[string]any{"maxRetries": int64(-1)}),
			"spec.remediation.maxRetries: Invalid value: should be greater than or equal to 0")),
		Entry("MachineHealthCheck: a negative retryPeriodSeconds", badObject("MachineHealthCheck",
			setTo("spec.remediation", map[string]any{"retryPeriodSeconds": int64(-30)}),
			"spec.remediation.retryPeriodSeconds: Invalid value: should be greater than or equal to 0")),
		Entry("MachineHealthCheck: a negative minHealthyPeriodSeconds", badObject("MachineHealthCheck",
			setTo("spec.remediation", map[string]any{"minHealthyPeriodSeconds": int64(-1)}),
			"spec.remediation.minHealthyPeriodSeconds: Invalid value: should be greater than or equal to 0")),
		Entry("MachineHealthCheck: a negative Machine condition timeout", badObject("MachineHealthCheck",
			setTo("spec.unhealthyMachineConditions", []any{map[string]any{"type": "InstanceHealthy", "status": "False", "timeoutSeconds": int64(-5)}}),
			"spec.unhealthyMachineConditions[0].timeoutSeconds: Invalid value: should be greater than or equal to 0")),
		Entry("MachineHealthCheck: a Machine condition rule on HealthCheckSucceeded", badObject("MachineHealthCheck",
			setTo("spec.unhealthyMachineConditions", []any{map[string]any{"type": "HealthCheckSucceeded", "status": "False", "timeoutSeconds": int64(5)}}),
			"spec.unhealthyMachineConditions: Invalid value: must not name HealthCheckSucceeded")),
		Entry("MachineHealthCheck: no selector", badObject("MachineHealthCheck",
			remove("spec.selector"), "spec.selector: Required value")),
		Entry("MachineHealthCheck: remediationTemplate without a name", badObject("MachineHealthCheck",
			setTo("spec.remediationTemplate", map[string]any{"apiVersion": "remediation.example.com/v1", "kind": "RebootTemplate"}),
			"spec.remediationTemplate.name: Required value")),

		// MachineDrainRule
		Entry("MachineDrainRule: an unknown behavior", badObject("MachineDrainRule",
			setTo("spec.drain", map[string]any{"behavior": "Evict"}), `spec.drain.behavior: Unsupported value: "Evict"`)),
		Entry("MachineDrainRule: a negative order", badObject("MachineDrainRule",
			setTo("spec.drain.order", int64(-1)), "spec.drain.order: Invalid value: -1")),
		Entry("MachineDrainRule: an order with behavior Skip", badObject("MachineDrainRule",
			setTo("spec.drain.behavior", "Skip"), "spec.drain.order: Invalid value: order may only be set when behavior is Drain")),
		Entry("MachineDrainRule: no drain", badObject("MachineDrainRule",
			remove("spec.drain"), "spec.drain: Required value")),
		Entry("MachineDrainRule: a pods entry without a selector", badObject("MachineDrainRule",
			setTo("spec.pods", []any{map[string]any{"namespaceSelector": map[string]any{}}}), "spec.pods[0].selector: Required value")),
		Entry("MachineDrainRule: a selector operator that does not exist", badObject("MachineDrainRule",
			setTo("spec.machines", []any{map[string]any{"selector": map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "Like"}}}}}),
			"spec.machines[0].selector.matchExpressions[0].operator: Unsupported value")),

		// MachineClass
		Entry("MachineClass: no providerSpec", badObject("MachineClass",
			remove("spec.providerSpec"), "spec.providerSpec: Required value")),
		Entry("MachineClass: node template taint with an invalid effect", badObject("MachineClass",
			setTo("spec.nodeTemplate.taints", []any{map[string]any{"key": "gpu", "effect": "Maybe"}}),
			"spec.nodeTemplate.taints: Invalid value: effect must be one of")),
		Entry("MachineClass: capacity that is not a quantity", badObject("MachineClass",
			setTo("spec.nodeTemplate.capacity.cpu", "lots"), "spec.nodeTemplate.capacity.cpu")),
	)
})

var _ = Describe("Updating an object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("refuses to change spec.providerID once it is set", func() {
		m := newObject("Machine", ns, "m")
		set(m.Object, "spec.providerID", "sim:///one")
		Expect(k8s.Create(ctx, m)).To(Succeed())

		set(m.Object, "spec.providerID", "sim:///two")
		err := k8s.Update(ctx, m)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.providerID: Invalid value: providerID is immutable once set"))

		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(m), m)).To(Succeed())
		del(m.Object, "spec.providerID")
		err = k8s.Update(ctx, m)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.providerID: Invalid value: providerID is immutable once set"))
	})

	It("lets a provider set spec.providerID on a Machine that had none", func() {
		m := newObject("Machine", ns, "m")
		Expect(k8s.Create(ctx, m)).To(Succeed())
		set(m.Object, "spec.providerID", "sim:///one")
		Expect(k8s.Update(ctx, m)).To(Succeed())
	})

	for _, kind := range []string{"MachineSet", "MachineDeployment"} {
		It("refuses to change a "+kind+"'s selector", func() {
			o := newObject(kind, ns, "s")
			Expect(k8s.Create(ctx, o)).To(Succeed())
			set(o.Object, "spec.selector.matchLabels", map[string]any{"pool": "workers", "tier": "batch"})
			err := k8s.Update(ctx, o)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("spec.selector: Invalid value: selector is immutable"))
		})
	}
})

var _ = Describe("A valid object", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("round-trips a Machine with every field, keeping unknown providerSpec fields", func() {
		m := newObject("Machine", ns, "m")
		Expect(k8s.Create(ctx, m)).To(Succeed())
		got := &v1beta1.Machine{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "m"}, got)).To(Succeed())
		Expect(string(got.Spec.ProviderSpec.Value.Raw)).To(MatchJSON(`{"instanceType":"small","disk":{"sizeGiB":20}}`))
		Expect(got.Spec.Metadata.Labels).To(HaveKeyWithValue("node-role.kubernetes.io/worker", ""))
		Expect(got.Spec.Taints).To(ConsistOf(v1beta1.MachineTaint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule, Propagation: v1beta1.TaintPropagationAlways}),
			"propagation defaults to Always")
		Expect(got.Spec.LifecycleHooks.PreDrain).To(ConsistOf(v1beta1.LifecycleHook{Name: "backup", Owner: "backup-operator"}))
		Expect(*got.Spec.Deletion.NodeDrainTimeoutSeconds).To(Equal(int32(300)))
	})

	It("gets a MachineSet's defaults: 1 replica, Random deletion", func() {
		o := newObject("MachineSet", ns, "s")
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineSet{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "s"}, got)).To(Succeed())
		Expect(*got.Spec.Replicas).To(Equal(int32(1)))
		Expect(got.Spec.DeletePolicy).To(Equal(v1beta1.RandomDeletePolicy))
	})

	It("gets a MachineDeployment's defaults: RollingUpdate, history 1, 600s deadline", func() {
		o := newObject("MachineDeployment", ns, "d")
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineDeployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "d"}, got)).To(Succeed())
		Expect(*got.Spec.Replicas).To(Equal(int32(1)))
		Expect(got.Spec.Strategy.Type).To(Equal(v1beta1.RollingUpdateStrategy))
		Expect(*got.Spec.RevisionHistoryLimit).To(Equal(int32(1)))
		Expect(*got.Spec.ProgressDeadlineSeconds).To(Equal(int32(600)))
	})

	It("gets maxSurge 1 and maxUnavailable 0 when rollingUpdate is given empty", func() {
		o := newObject("MachineDeployment", ns, "d")
		set(o.Object, "spec.strategy", map[string]any{"rollingUpdate": map[string]any{}})
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineDeployment{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "d"}, got)).To(Succeed())
		Expect(got.Spec.Strategy.RollingUpdate.MaxSurge.String()).To(Equal("1"))
		Expect(got.Spec.Strategy.RollingUpdate.MaxUnavailable.String()).To(Equal("0"))
	})

	It("accepts percentages and ranges in a MachineHealthCheck and defaults the startup timeout", func() {
		o := newObject("MachineHealthCheck", ns, "h")
		set(o.Object, "spec.unhealthyRange", "[0-2]")
		set(o.Object, "spec.maxInFlight", "25%")
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineHealthCheck{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "h"}, got)).To(Succeed())
		Expect(*got.Spec.NodeStartupTimeoutSeconds).To(Equal(v1beta1.DefaultNodeStartupTimeoutSeconds))
		Expect(got.Spec.MaxUnhealthy).To(BeNil(), "maxUnhealthy is not defaulted in the schema, so unhealthyRange stays usable")
		Expect(got.Spec.Remediation).To(BeNil(), "no remediation limits unless asked for")
	})

	It("accepts remediation limits and Machine condition rules in a MachineHealthCheck and defaults the periods", func() {
		o := newObject("MachineHealthCheck", ns, "limits")
		set(o.Object, "spec.remediation", map[string]any{"maxRetries": int64(0)})
		set(o.Object, "spec.unhealthyMachineConditions", []any{map[string]any{"type": "InstanceHealthy", "status": "False", "timeoutSeconds": int64(0)}})
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineHealthCheck{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "limits"}, got)).To(Succeed())
		Expect(*got.Spec.Remediation.MaxRetries).To(BeZero())
		Expect(*got.Spec.Remediation.RetryPeriodSeconds).To(BeZero())
		Expect(*got.Spec.Remediation.MinHealthyPeriodSeconds).To(Equal(v1beta1.DefaultMinHealthyPeriodSeconds))
		Expect(got.Spec.UnhealthyMachineConditions).To(HaveLen(1))
	})

	It("round-trips a MachineDrainRule, and defaults its behavior to Drain", func() {
		o := newObject("MachineDrainRule", ns, "r")
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineDrainRule{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "r"}, got)).To(Succeed())
		Expect(got.Spec.Pods[0].NamespaceSelector.MatchLabels).To(HaveKeyWithValue("tier", "prod"))
		Expect(*got.Spec.Drain.Order).To(Equal(int32(10)))

		o = newObject("MachineDrainRule", ns, "bare")
		set(o.Object, "spec", map[string]any{"drain": map[string]any{}})
		Expect(k8s.Create(ctx, o)).To(Succeed())
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bare"}, got)).To(Succeed())
		Expect(got.Spec.Drain.Behavior).To(Equal(v1beta1.DrainBehaviorDrain))
		Expect(got.Spec.Machines).To(BeEmpty(), "no machines: every Machine of the namespace")
	})

	It("round-trips a MachineClass with its node template", func() {
		o := newObject("MachineClass", ns, "c")
		Expect(k8s.Create(ctx, o)).To(Succeed())
		got := &v1beta1.MachineClass{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "c"}, got)).To(Succeed())
		Expect(string(got.Spec.ProviderSpec.Raw)).To(MatchJSON(`{"instanceType":"large"}`))
		Expect(got.Spec.NodeTemplate.Capacity.Cpu().String()).To(Equal("4"))
	})
})
