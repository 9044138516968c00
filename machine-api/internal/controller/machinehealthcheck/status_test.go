package machinehealthcheck

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestMachineCondition protects what a Machine's HealthCheckSucceeded says: the verdict, and for an
// unhealthy Machine what is done about it, with the cause first in the message.
func TestMachineCondition(t *testing.T) {
	spec := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{{Type: "Ready", Status: "False", TimeoutSeconds: 60}},
		MaxUnhealthy:        ptrIntStr("1"),
	}
	sick := notReadyFor(time.Hour)
	tests := map[string]struct {
		targets []target // the first is checked
		written bool
		status  metav1.ConditionStatus
		reason  string
		message []string // substrings
	}{
		"healthy": {
			targets: []target{healthyTarget("a")}, written: true, status: metav1.ConditionTrue, reason: ReasonHealthy,
			message: []string{"Node node-a is healthy"},
		},
		"waiting for its Node": {
			targets: []target{healthyTarget("a", noNodeProvisionedAgo(time.Second))}, written: true,
			status: metav1.ConditionUnknown, reason: ReasonWaitingForNode, message: []string{"remediated if none by"},
		},
		"remediated: the cause, then the remedy": {
			targets: []target{healthyTarget("a", sick)}, written: true, status: metav1.ConditionFalse, reason: ReasonRemediating,
			message: []string{"Ready=False since", "; remediating: REMEDY"},
		},
		"too many unhealthy: the cause, then why nothing is done, with the counts": {
			targets: []target{healthyTarget("a", sick), healthyTarget("b", sick)}, written: true,
			status: metav1.ConditionFalse, reason: ReasonRemediationNotAllowed,
			message: []string{"Ready=False since", "not remediated: 2 of 2 targets are unhealthy, more than maxUnhealthy 1 allows"},
		},
		"not owned by a MachineSet": {
			targets: []target{healthyTarget("a", sick, unowned)}, written: true, status: metav1.ConditionFalse,
			reason: ReasonNotOwnedByMachineSet, message: []string{"remediate it manually"},
		},
		"a Machine being deleted is left as it is": {
			targets: []target{healthyTarget("a", sick, remediatedByUs)}, written: false,
		},
		"a paused Machine is left as it is": {
			targets: []target{healthyTarget("a", sick, annotated(v1beta1.PausedAnnotation))}, written: false,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev, err := evaluate(&spec, tc.targets, false, now)
			if err != nil {
				t.Fatal(err)
			}
			c, written := machineCondition(&ev.outcomes[0], func(*outcome) string { return "REMEDY" })
			if written != tc.written {
				t.Fatalf("written = %t, want %t", written, tc.written)
			}
			if !written {
				return
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
		ev, err := evaluate(&spec, targets, false, now)
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
			c.Message != "3 of 5 targets are unhealthy, more than maxUnhealthy 40% (2) allows; remediating nothing until at most 2 are" {
			t.Errorf("RemediationAllowed = %+v", c)
		}
	})
	t.Run("within limits", func(t *testing.T) {
		ev, err := evaluate(&spec, []target{healthyTarget("a", sick), healthyTarget("b"), healthyTarget("c")}, false, now)
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
		_, err := evaluate(&v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[9-1]"}, nil, false, now)
		st := computeStatus(&scope{mhc: mhc, now: now, invalid: err})
		c := meta.FindStatusCondition(st.Conditions, v1beta1.RemediationAllowedCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec || !strings.Contains(c.Message, "[9-1]") {
			t.Errorf("RemediationAllowed = %+v", c)
		}
	})
}
