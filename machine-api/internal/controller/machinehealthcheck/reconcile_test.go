package machinehealthcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientevents "k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machinehealthcheck"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/expect"
	"machineapi.dev/machine-api/statemetrics"
)

// The reconcile-once level: no manager runs; the Reconciler reads the API server directly and
// its clock is fake, so each timeout is stepped to, one second short of it and then past it.
var _ = Describe("Reconciling a MachineHealthCheck once at a time", func() {
	// t0 has whole seconds: the API server keeps times to the second.
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	var (
		ns    string
		clock *testclock.FakeClock
		r     *machinehealthcheck.Reconciler
		set   *v1beta1.MachineSet
		lbls  = map[string]string{"pool": "once"}
	)
	BeforeEach(func() {
		ns = newNamespace()
		clock = testclock.NewFakeClock(t0)
		r = &machinehealthcheck.Reconciler{Deps: reconciler.Deps{Client: k8s, APIReader: k8s, Recorder: clientevents.NewFakeRecorder(1000), Clock: clock}}
		set = pausedSet(ns, "once", 1, lbls) // nothing runs to act on it: it only owns the Machine
		// The gauges are computed from the checks' status when scraped; no manager runs here to
		// register them, so the spec does, reading the API server.
		Expect(statemetrics.Register(metrics.Registry, machinehealthcheck.Collector(k8s, nil))).To(Succeed())
	})

	// machineOf creates a Machine of set, held by a finalizer (so its deletion can be seen), with
	// the status the machine controller and the node linker would have written.
	machineOf := func(name string, status v1beta1.MachineStatus) *v1beta1.Machine {
		GinkgoHelper()
		m := builder.Machine(ns, name).WithLabels(lbls).Build()
		m.OwnerReferences = machinesOwnedBy(set)
		m.Finalizers = []string{v1beta1.MachineFinalizer}
		Expect(k8s.Create(ctx, m)).To(Succeed())
		m.Status = status
		Expect(k8s.Status().Update(ctx, m)).To(Succeed())
		return m
	}
	// nodeReady creates a Node whose Ready condition has had status since t.
	nodeReady := func(name string, status corev1.ConditionStatus, since time.Time) *corev1.Node {
		GinkgoHelper()
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(since), LastHeartbeatTime: metav1.NewTime(since),
			}}},
		}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		return n
	}
	healthOf := func(m *v1beta1.Machine) string {
		GinkgoHelper()
		c := meta.FindStatusCondition(expect.Fetched(ctx, k8s, m).Status.Conditions, v1beta1.HealthCheckSucceededCondition)
		Expect(c).NotTo(BeNil())
		return string(c.Status) + "/" + c.Reason
	}
	// requested reports whether the check asked m's MachineSet to replace it (its verdict,
	// OwnerRemediated=False): that is the whole of a remediation on the health check's side.
	requested := func(m *v1beta1.Machine) bool {
		GinkgoHelper()
		return meta.IsStatusConditionFalse(expect.Fetched(ctx, k8s, m).Status.Conditions, v1beta1.OwnerRemediatedCondition)
	}
	ownerRemediated := func(m *v1beta1.Machine) *metav1.Condition {
		GinkgoHelper()
		return meta.FindStatusCondition(expect.Fetched(ctx, k8s, m).Status.Conditions, v1beta1.OwnerRemediatedCondition)
	}

	It("remediates a Machine once its Node condition has held for timeoutSeconds, not a second before", func() {
		node := nodeReady("notready", corev1.ConditionFalse, t0)
		m := machineOf("notready", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0.Add(-time.Hour))),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
		})
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 300).WithMaxUnhealthy("1").Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		clock.Step(time.Minute)
		res := expect.Reconciled(ctx, r, check)
		Expect(res.RequeueAfter).To(Equal(4*time.Minute), "back when the timeout expires")
		Expect(healthOf(m)).To(Equal("Unknown/Suspect"), "failing a rule within its timeout")
		Expect(statusFieldsOwnedBy(m, machinehealthcheck.FieldOwner)).To(Equal(map[string][]string{
			"f:conditions": {`k:{"type":"HealthCheckSucceeded"}`},
		}), "on a Machine the health check owns its condition and nothing else")

		clock.Step(4*time.Minute - time.Second)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(time.Second))
		Expect(requested(m)).To(BeFalse())

		writes := expect.RecordWrites(k8s)
		r.Client = writes
		clock.Step(time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue(), "remediated: its set is asked to replace it")
		Expect(healthOf(m)).To(Equal("False/Remediating"))
		Expect(writes.To(m.Name)).To(Equal([]expect.Write{{Verb: "apply", Name: m.Name, Subresource: "status"}}),
			"one write of the verdict; the set's delete is the other")
		Expect(expect.Fetched(ctx, k8s, m).DeletionTimestamp.IsZero()).To(BeTrue(), "the check deletes nothing: its owner does")
		Expect(statusFieldsOwnedBy(m, machinehealthcheck.FieldOwner)).To(Equal(map[string][]string{
			"f:conditions": {`k:{"type":"HealthCheckSucceeded"}`, `k:{"type":"OwnerRemediated"}`},
		}), "the verdict: its two conditions and nothing else")
		st := expect.Fetched(ctx, k8s, check).Status
		Expect(st.ExpectedMachines).To(BeEquivalentTo(1))
		Expect(meta.IsStatusConditionTrue(st.Conditions, v1beta1.RemediationAllowedCondition)).To(BeTrue())
	})

	It("remediates a Machine without a Node once nodeStartupTimeoutSeconds has passed since provisioning", func() {
		m := machineOf("never-boots", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseProvisioned, ProvisionedTime: ptrTo(metav1.NewTime(t0)),
		})
		check := builder.MachineHealthCheck(ns, "once", lbls).WithNodeStartupTimeout(600).WithMaxUnhealthy("1").Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		clock.Step(time.Minute)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(9 * time.Minute))
		Expect(healthOf(m)).To(Equal("Unknown/WaitingForNode"))

		clock.Step(9*time.Minute - time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeFalse())

		clock.Step(time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue())
		Expect(healthOf(m)).To(Equal("False/Remediating"))
	})

	It("remediates a Machine once an unhealthyMachineConditions rule has held for its timeout, not a second before", func() {
		node := nodeReady("provider", corev1.ConditionTrue, t0.Add(-time.Hour))
		m := machineOf("provider", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0.Add(-time.Hour))),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
			Conditions: []metav1.Condition{{
				Type: "InstanceHealthy", Status: metav1.ConditionFalse, Reason: "HostFailing", Message: "the provider reports a failing host",
				LastTransitionTime: metav1.NewTime(t0),
			}},
		})
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 300).
			WithUnhealthyMachineCondition("InstanceHealthy", "False", 120).WithMaxUnhealthy("1").Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		clock.Step(time.Minute)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(time.Minute), "back when the rule's timeout expires")
		Expect(healthOf(m)).To(Equal("Unknown/Suspect"))

		clock.Step(time.Minute - time.Second)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(time.Second))
		Expect(requested(m)).To(BeFalse())

		clock.Step(time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue(), "remediated on the Machine's own condition")
		c := meta.FindStatusCondition(expect.Fetched(ctx, k8s, m).Status.Conditions, v1beta1.HealthCheckSucceededCondition)
		Expect(c.Reason).To(Equal(machinehealthcheck.ReasonRemediating))
		Expect(c.Message).To(HavePrefix("Machine provider has had InstanceHealthy=False since 2026-05-04T12:00:00Z, longer than 2m0s; remediating: "))
		Expect(meta.FindStatusCondition(expect.Fetched(ctx, k8s, m).Status.Conditions, "InstanceHealthy")).NotTo(BeNil(),
			"the provider's condition is left as it is")
	})

	It("keeps a Machine without a Node whose lineage has spent maxRetries past nodeStartupTimeoutSeconds, and says so", func() {
		m := machineOf("last", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseProvisioned, ProvisionedTime: ptrTo(metav1.NewTime(t0)),
		})
		inherit(m, "first", 2, t0.Add(-time.Minute))
		check := builder.MachineHealthCheck(ns, "once", lbls).WithNodeStartupTimeout(2).WithMaxUnhealthy("100%").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptrTo[int32](2)}).Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		clock.Step(time.Second)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(time.Second), "back when the startup timeout expires")
		Expect(healthOf(m)).To(Equal("Unknown/" + machinehealthcheck.ReasonWaitingForNode))

		clock.Step(time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeFalse(), "its lineage has spent maxRetries: kept for inspection")
		Expect(healthOf(m)).To(Equal("False/" + machinehealthcheck.ReasonRetriesExhausted))
		Expect(conditionOf(expect.Fetched(ctx, k8s, check), v1beta1.RetriesExhaustedCondition)).To(
			HavePrefix("True/" + machinehealthcheck.ReasonRetriesSpent + ": 1 unhealthy Machines are kept for inspection"))
		Expect(checkMetric(client.ObjectKeyFromObject(check), "machineapi_machinehealthcheck_retries_exhausted")()).To(Equal(map[string]float64{"": 1}))
		Expect(checkMetric(client.ObjectKeyFromObject(check), "machineapi_machinehealthcheck_remediations_refused_total")()).To(
			Equal(map[string]float64{`reason="RetriesExhausted"`: 1}))

		clock.Step(time.Hour)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeFalse(), "and kept however long it stays unhealthy")
	})

	It("asks the set to replace a Machine, saying which remediation of which lineage, and writes no metadata, when spec.remediation is set", func() {
		node := nodeReady("marked", corev1.ConditionFalse, t0.Add(-time.Hour))
		m := machineOf("marked", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0.Add(-2 * time.Hour))),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
		})
		before := expect.Fetched(ctx, k8s, m).DeepCopy()
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 300).WithMaxUnhealthy("1").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptrTo[int32](2)}).Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		expect.Reconciled(ctx, r, check)
		got := expect.Fetched(ctx, k8s, m)
		Expect(got.DeletionTimestamp.IsZero()).To(BeTrue())
		Expect(got.Finalizers).To(Equal(before.Finalizers), "no finalizer of the check's")
		Expect(got.Annotations).To(Equal(before.Annotations), "the lineage is the set's to write, on the replacement")
		owner := ownerRemediated(m)
		Expect(owner).NotTo(BeNil())
		Expect(owner.Status).To(Equal(metav1.ConditionFalse))
		Expect(owner.Reason).To(Equal(v1beta1.RemediationRequestedReason), "a first failure: the replacement counts on from this Machine")
		Expect(owner.Message).To(Equal("MachineSet once is asked to create a replacement and delete this Machine (remediation 1 of lineage marked, maxRetries 2)"))
		Expect(owner.LastTransitionTime.Time).To(BeTemporally("==", t0), "when the remediation was asked: the replacement's lineage-remediated-at")
		Expect(meta.FindStatusCondition(got.Status.Conditions, v1beta1.HealthCheckSucceededCondition).Message).To(
			HaveSuffix("; remediating: " + owner.Message))
		Expect(conditionOf(expect.Fetched(ctx, k8s, check), v1beta1.RetriesExhaustedCondition)).To(Equal(
			"False/WithinRetries: no unhealthy Machine's lineage has spent maxRetries 2"))

		By("judged again, a requested Machine is a remediation in flight, asked once")
		clock.Step(time.Minute)
		writes := expect.RecordWrites(k8s)
		r.Client = writes
		expect.Reconciled(ctx, r, check)
		Expect(writes.To(m.Name)).To(BeEmpty())
		Expect(ownerRemediated(m).LastTransitionTime.Time).To(BeTemporally("==", t0))
		Expect(expect.Fetched(ctx, k8s, check).Status.RemediationsAllowed).To(BeEquivalentTo(0), "1 in flight of maxUnhealthy 1")
	})

	It("holds a replacement that fails within retryPeriodSeconds of its lineage's last remediation until the period is over", func() {
		node := nodeReady("heir", corev1.ConditionFalse, t0.Add(-time.Hour))
		m := machineOf("heir", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0.Add(-2 * time.Hour))),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
		})
		inherit(m, "first", 1, t0)
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 300).WithMaxUnhealthy("1").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptrTo[int32](3), RetryPeriodSeconds: ptrTo[int32](300)}).Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())

		clock.Step(time.Minute)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(4 * time.Minute))
		Expect(healthOf(m)).To(Equal("False/" + machinehealthcheck.ReasonWaitingForRetryPeriod))
		Expect(requested(m)).To(BeFalse())

		clock.Step(4*time.Minute - time.Second)
		Expect(expect.Reconciled(ctx, r, check).RequeueAfter).To(Equal(time.Second))
		Expect(requested(m)).To(BeFalse())

		clock.Step(time.Second)
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue())
		Expect(ownerRemediated(m).Reason).To(Equal(v1beta1.RemediationRequestedReason))
		Expect(ownerRemediated(m).LastTransitionTime.Time).To(BeTemporally("==", t0.Add(5*time.Minute)), "the replacement will count its lineage's remediation from now")
		Expect(ownerRemediated(m).Message).To(ContainSubstring("(remediation 2 of lineage first, maxRetries 3)"))
	})

	It("starts the lineage of a replacement over when it had been healthy for minHealthyPeriodSeconds before it failed, not when sooner", func() {
		node := nodeReady("recovered", corev1.ConditionTrue, t0)
		m := machineOf("recovered", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0)),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
		})
		inherit(m, "first", 2, t0.Add(-time.Hour))
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 0).WithMaxUnhealthy("1").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptrTo[int32](2), MinHealthyPeriodSeconds: ptrTo[int32](600)}).Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())
		expect.Reconciled(ctx, r, check)
		Expect(healthOf(m)).To(Equal("True/Healthy"))

		By("its Node fails 10 minutes after the Machine turned healthy: a first failure")
		clock.Step(10 * time.Minute)
		node.Status.Conditions[0].Status, node.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(clock.Now())
		Expect(k8s.Status().Update(ctx, node)).To(Succeed())
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue(), "not kept for spent retries: its lineage starts over")
		Expect(ownerRemediated(m).Reason).To(Equal(v1beta1.RemediationRequestedLineageResetReason), "the set's replacement counts one remediation")
		Expect(ownerRemediated(m).Message).To(ContainSubstring("remediation 1 of lineage first, which starts over"))
		Expect(expect.Fetched(ctx, k8s, m).Annotations).To(HaveKeyWithValue(v1beta1.LineageRetriesAnnotation, "2"), "the check writes no metadata")
	})

	It("keeps a replacement with spent retries that fails sooner than minHealthyPeriodSeconds after it turned healthy", func() {
		node := nodeReady("flaky", corev1.ConditionTrue, t0)
		m := machineOf("flaky", v1beta1.MachineStatus{
			Phase: v1beta1.MachinePhaseRunning, ProvisionedTime: ptrTo(metav1.NewTime(t0)),
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: node.Name, UID: node.UID},
		})
		inherit(m, "first", 2, t0.Add(-time.Hour))
		check := builder.MachineHealthCheck(ns, "once", lbls).WithUnhealthyCondition("Ready", "False", 0).WithMaxUnhealthy("1").
			WithRemediationLimits(v1beta1.RemediationLimits{MaxRetries: ptrTo[int32](2), MinHealthyPeriodSeconds: ptrTo[int32](600)}).Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())
		expect.Reconciled(ctx, r, check)

		clock.Step(10*time.Minute - time.Second)
		node.Status.Conditions[0].Status, node.Status.Conditions[0].LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(clock.Now())
		Expect(k8s.Status().Update(ctx, node)).To(Succeed())
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeFalse())
		Expect(healthOf(m)).To(Equal("False/" + machinehealthcheck.ReasonRetriesExhausted))
	})

	It("judges a Machine that changed since it was read again before remediating it", func() {
		m := machineOf("changed", v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioned, ProvisionedTime: ptrTo(metav1.NewTime(t0))})
		check := builder.MachineHealthCheck(ns, "once", lbls).WithNodeStartupTimeout(60).WithMaxUnhealthy("1").Build()
		Expect(k8s.Create(ctx, check)).To(Succeed())
		stale := expect.Fetched(ctx, k8s, m).DeepCopy()
		m.Annotations = map[string]string{"changed": "after it was read"}
		Expect(k8s.Update(ctx, m)).To(Succeed())
		r.Client = &staleMachineList{Client: k8s, stale: stale}

		clock.Step(2 * time.Minute)
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(check)})
		Expect(err).NotTo(HaveOccurred(), "a Machine that changed is no error")
		Expect(res.RequeueAfter).To(BeNumerically(">", 0), "judged again soon")
		Expect(requested(m)).To(BeFalse(), "no remediation on a verdict about an older Machine")

		r.Client = k8s
		expect.Reconciled(ctx, r, check)
		Expect(requested(m)).To(BeTrue())
	})
})

// statusFieldsOwnedBy returns, for the field manager's entry on obj's status subresource, each
// status field it owns with the keys it owns under it.
func statusFieldsOwnedBy(obj client.Object, manager string) map[string][]string {
	GinkgoHelper()
	for _, e := range expect.Fetched(ctx, k8s, obj).GetManagedFields() {
		if e.Manager != manager || e.Subresource != "status" {
			continue
		}
		var fields map[string]map[string]map[string]any
		Expect(json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		out := map[string][]string{}
		for name, sub := range fields["f:status"] {
			out[name] = slices.Sorted(maps.Keys(sub))
			out[name] = slices.DeleteFunc(out[name], func(k string) bool { return k == "." })
		}
		return out
	}
	return nil
}

// staleMachineList is a client whose Machine lists show stale instead of the stored Machine of
// that name, as a cache that has not caught up would.
type staleMachineList struct {
	client.Client
	stale *v1beta1.Machine
}

func (s *staleMachineList) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if ml, ok := list.(*v1beta1.MachineList); ok {
		for i := range ml.Items {
			if ml.Items[i].Name == s.stale.Name {
				ml.Items[i] = *s.stale.DeepCopy()
			}
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// inherit gives m, as its MachineSet would, the lineage id after retries remediations, the last at
// when.
func inherit(m *v1beta1.Machine, id string, retries int, when time.Time) {
	GinkgoHelper()
	before := m.DeepCopy()
	m.Annotations = map[string]string{
		v1beta1.LineageAnnotation:             id,
		v1beta1.LineageRetriesAnnotation:      fmt.Sprint(retries),
		v1beta1.LineageRemediatedAtAnnotation: when.UTC().Format(time.RFC3339),
		v1beta1.ReplacesAnnotation:            id,
	}
	Expect(k8s.Patch(ctx, m, client.MergeFrom(before))).To(Succeed())
}
