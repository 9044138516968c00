package machinehealthcheck

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestMachineVerdict protects what a Machine's HealthCheckSucceeded says: the verdict, and for an
// unhealthy Machine what is done about it, with the cause first in the message; and the
// OwnerRemediated condition that asks its MachineSet to replace it, with the reason that tells the
// set whether the lineage goes on.
func TestMachineVerdict(t *testing.T) {
	spec := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{{Type: "Ready", Status: "False", TimeoutSeconds: 60}},
		MaxUnhealthy:        ptrIntStr("1"),
	}
	sick := notReadyFor(time.Hour)
	tests := map[string]struct {
		targets []target // the first is checked
		limits  *v1beta1.RemediationLimits
		written bool
		status  metav1.ConditionStatus
		reason  string
		message []string // substrings
		owner   string   // the OwnerRemediated reason; "" when the verdict has none
	}{
		"healthy": {
			targets: []target{healthyTarget("a")}, written: true, status: metav1.ConditionTrue, reason: ReasonHealthy,
			message: []string{"Node node-a is healthy"},
		},
		"waiting for its Node": {
			targets: []target{healthyTarget("a", noNodeProvisionedAgo(time.Second))}, written: true,
			status: metav1.ConditionUnknown, reason: ReasonWaitingForNode, message: []string{"remediated if none by"},
		},
		"remediated: the cause, then the remedy, and the set is asked to replace it; without limits its lineage starts over": {
			targets: []target{healthyTarget("a", sick)}, written: true, status: metav1.ConditionFalse, reason: ReasonRemediating,
			message: []string{"Ready=False since", "; remediating: REMEDY"}, owner: v1beta1.RemediationRequestedLineageResetReason,
		},
		"a remediation in flight keeps its verdict and the request to its set as they are": {
			targets: []target{healthyTarget("a", sick, remediatedByUs)}, written: true, status: metav1.ConditionFalse, reason: ReasonRemediating,
			message: []string{"; remediating: MachineSet ms is asked to replace it"}, owner: v1beta1.RemediationRequestedReason,
		},
		"too many failing: the cause, then why nothing is done, without the counts (they change with every Node)": {
			targets: []target{healthyTarget("a", sick), healthyTarget("b", sick)}, written: true,
			status: metav1.ConditionFalse, reason: ReasonRemediationNotAllowed,
			message: []string{"Ready=False since", "not remediated: more targets are failing than maxUnhealthy 1 allows (see the health check's RemediationAllowed condition)"},
		},
		"suspect: what fails and when it turns unhealthy": {
			targets: []target{healthyTarget("a", notReadyFor(10*time.Second))}, written: true,
			status: metav1.ConditionUnknown, reason: ReasonSuspect,
			message: []string{"Node node-a has had Ready=False since 2026-05-04T11:59:50Z; unhealthy at 2026-05-04T12:00:50Z unless it recovers (timeoutSeconds 60)"},
		},
		"suspect while remediation is stopped: says so too": {
			targets: []target{healthyTarget("a", notReadyFor(10*time.Second)), healthyTarget("b", sick)}, written: true,
			status: metav1.ConditionUnknown, reason: ReasonSuspect,
			message: []string{"unless it recovers (timeoutSeconds 60); meanwhile remediation is stopped: more targets are failing than maxUnhealthy 1 allows"},
		},
		"retries spent: kept for inspection": {
			targets: []target{healthyTarget("a", sick, inLineage("a0", 2, time.Hour))}, limits: &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)},
			written: true, status: metav1.ConditionFalse, reason: ReasonRetriesExhausted,
			message: []string{"not remediated: its lineage a0 has been remediated 2 times (maxRetries 2), last at 2026-05-04T11:00:00Z; the Machine is kept for inspection"},
		},
		"remediated with lineages tracked: which remediation of which lineage": {
			targets: []target{healthyTarget("a", sick)}, limits: &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)},
			written: true, status: metav1.ConditionFalse, reason: ReasonRemediating,
			message: []string{"; remediating: MachineSet ms is asked to create a replacement and delete this Machine (remediation 1 of lineage a, maxRetries 2)"},
			owner:   v1beta1.RemediationRequestedReason,
		},
		"remediated after the Machine passed the check for minHealthyPeriodSeconds: its lineage starts over": {
			targets: []target{healthyTarget("a", sick, inLineage("a0", 2, 3*time.Hour), linkedSince(2*time.Hour))},
			limits:  &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2), MinHealthyPeriodSeconds: ptr.To[int32](600)},
			written: true, status: metav1.ConditionFalse, reason: ReasonRemediating,
			message: []string{"(remediation 1 of lineage a0, which starts over: the Machine had been healthy for 10m0s before it failed, maxRetries 2)"},
			owner:   v1beta1.RemediationRequestedLineageResetReason,
		},
		"not owned by a MachineSet": {
			targets: []target{healthyTarget("a", sick, unowned)}, written: true, status: metav1.ConditionFalse,
			reason: ReasonNotOwnedByMachineSet, message: []string{"remediate it manually"},
		},
		"a Machine being deleted is left as it is": {
			targets: []target{healthyTarget("a", sick, replacedByItsSet)}, written: false,
		},
		"a paused Machine is left as it is": {
			targets: []target{healthyTarget("a", sick, annotated(v1beta1.PausedAnnotation))}, written: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := *spec.DeepCopy()
			spec.Remediation = tc.limits
			ev, err := evaluate(&spec, tc.targets, false, time.Time{}, now)
			if err != nil {
				t.Fatal(err)
			}
			remedy := func(*outcome) string { return "REMEDY" }
			if tc.limits != nil {
				remedy = remedyOf(&v1beta1.MachineHealthCheck{Spec: spec})
			}
			v, written := machineVerdict(&ev.outcomes[0], remedy, false)
			if written != tc.written {
				t.Fatalf("written = %t, want %t", written, tc.written)
			}
			if !written {
				return
			}
			c := v.health
			switch {
			case tc.owner == "" && v.owner != nil:
				t.Errorf("OwnerRemediated %+v, want none", v.owner)
			case tc.owner != "" && (v.owner == nil || v.owner.Status != metav1.ConditionFalse || v.owner.Reason != tc.owner):
				t.Errorf("OwnerRemediated %+v, want False/%s", v.owner, tc.owner)
			}
			if c.Type != v1beta1.HealthCheckSucceededCondition || c.Status != tc.status || c.Reason != tc.reason {
				t.Errorf("condition %s=%s %s, want %s %s", c.Type, c.Status, c.Reason, tc.status, tc.reason)
			}
			for _, m := range tc.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not contain %q", c.Message, m)
				}
			}
		})
	}
}

// TestComputeStatus protects the check's status: counts, sorted targets, RemediationAllowed with
// the counts, and the condition for a spec that cannot be evaluated.
func TestComputeStatus(t *testing.T) {
	spec := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{{Type: "Ready", Status: "False", TimeoutSeconds: 60}},
	}
	sick := notReadyFor(time.Hour)
	mhc := &v1beta1.MachineHealthCheck{ObjectMeta: metav1.ObjectMeta{Name: "mhc", Namespace: "ns", Generation: 3}, Spec: spec}

	t.Run("too many unhealthy", func(t *testing.T) {
		targets := []target{healthyTarget("e", sick), healthyTarget("d"), healthyTarget("c", sick), healthyTarget("b", sick), healthyTarget("a")}
		ev, err := evaluate(&spec, targets, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st := computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		if st.ExpectedMachines != 5 || st.CurrentHealthy != 2 || st.RemediationsAllowed != 0 || st.ObservedGeneration != 3 {
			t.Errorf("status %+v", st)
		}
		if strings.Join(st.Targets, ",") != "a,b,c,d,e" {
			t.Errorf("targets %v, want sorted a..e", st.Targets)
		}
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonTooManyUnhealthy ||
			c.Message != "3 of 5 targets failing (3 unhealthy, 0 within their timeout), more than maxUnhealthy 40% (2) allows; remediating nothing until at most 2 are" {
			t.Errorf("RemediationAllowed = %+v", c)
		}
		if meta.FindStatusCondition(st.Conditions, v1beta1.RetriesExhaustedCondition) != nil {
			t.Errorf("RetriesExhausted is set without maxRetries")
		}
	})
	t.Run("external remediation has no retry limit, so no RetriesExhausted", func(t *testing.T) {
		spec := *spec.DeepCopy()
		spec.Remediation = &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)}
		ev, err := evaluate(&spec, []target{healthyTarget("a", sick), healthyTarget("b")}, true, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st := computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		if c := meta.FindStatusCondition(st.Conditions, v1beta1.RetriesExhaustedCondition); c != nil {
			t.Errorf("RetriesExhausted = %+v on a check with external remediation", c)
		}
	})
	t.Run("suspects count: the outage of the issue", func(t *testing.T) {
		failing := notReadyFor(10 * time.Second)
		targets := []target{healthyTarget("a", sick), healthyTarget("b", failing), healthyTarget("c", failing), healthyTarget("d", failing),
			healthyTarget("e", failing), healthyTarget("f", failing), healthyTarget("g"), healthyTarget("h"), healthyTarget("i"), healthyTarget("j")}
		ev, err := evaluate(&spec, targets, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st := computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != metav1.ConditionFalse ||
			c.Message != "6 of 10 targets failing (1 unhealthy, 5 within their timeout), more than maxUnhealthy 40% (4) allows; remediating nothing until at most 4 are" {
			t.Errorf("RemediationAllowed = %+v", c)
		}
		if st.CurrentHealthy != 4 {
			t.Errorf("currentHealthy = %d, want 4: suspects are not healthy", st.CurrentHealthy)
		}
	})
	t.Run("remediations in flight are counted apart", func(t *testing.T) {
		spec := *spec.DeepCopy()
		spec.MaxUnhealthy = ptrIntStr("100%")
		targets := []target{healthyTarget("a", sick, remediatedByUs), healthyTarget("b", sick), healthyTarget("c", notReadyFor(time.Second))}
		ev, err := evaluate(&spec, targets, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		_, _, msg := remediationAllowed(ev)
		if msg != "3 of 3 targets failing (1 unhealthy, 1 being remediated, 1 within their timeout), within maxUnhealthy 100% (3)" {
			t.Errorf("RemediationAllowed message %q", msg)
		}
	})
	t.Run("retries exhausted names the Machines", func(t *testing.T) {
		spec := *spec.DeepCopy()
		spec.MaxUnhealthy = ptrIntStr("100%")
		spec.Remediation = &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](1)}
		mhc := &v1beta1.MachineHealthCheck{ObjectMeta: mhc.ObjectMeta, Spec: spec}
		targets := []target{healthyTarget("b", sick, inLineage("b0", 1, time.Hour)), healthyTarget("a", sick, inLineage("a0", 3, time.Hour)), healthyTarget("c", sick)}
		ev, err := evaluate(&spec, targets, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st := computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RetriesExhaustedCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonRetriesSpent ||
			!strings.HasPrefix(c.Message, "2 unhealthy Machines are kept for inspection, not remediated: their lineage has spent maxRetries 1: a, b; ") {
			t.Errorf("RetriesExhausted = %+v", c)
		}
		ev, err = evaluate(&spec, []target{healthyTarget("c", sick)}, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st = computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		if c := meta.FindStatusCondition(st.Conditions, v1beta1.RetriesExhaustedCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonWithinRetries {
			t.Errorf("RetriesExhausted = %+v, want False/WithinRetries", c)
		}
	})
	t.Run("within limits", func(t *testing.T) {
		ev, err := evaluate(&spec, []target{healthyTarget("a", sick), healthyTarget("b"), healthyTarget("c")}, false, time.Time{}, now)
		if err != nil {
			t.Fatal(err)
		}
		st := computeStatus(&scope{mhc: mhc, now: now, eval: ev})
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonWithinLimits || !c.LastTransitionTime.Time.Equal(now) {
			t.Errorf("RemediationAllowed = %+v", c)
		}
	})
	t.Run("invalid spec", func(t *testing.T) {
		_, err := evaluate(&v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[9-1]"}, nil, false, time.Time{}, now)
		st := computeStatus(&scope{mhc: mhc, now: now, invalid: err})
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, "[9-1]") {
			t.Errorf("RemediationAllowed = %+v", c)
		}
	})
}
