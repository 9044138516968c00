package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
)

func outdated(reason string) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1beta1.UpToDateCondition, Status: metav1.ConditionFalse, Reason: reason})
	}
}

func beingDeleted(m *v1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: t0} }

// TestDisruptionOf protects which budget reason a deletion counts under, and which deletions no
// budget holds: a Machine without a Node disrupts nothing, and a vanished or interrupted instance
// is an involuntary loss.
func TestDisruptionOf(t *testing.T) {
	missing := func(m *v1beta1.Machine) {
		r := v1beta1.InstanceMissingFailure
		m.Status.FailureReason = &r
	}
	cases := []struct {
		name   string
		m      *v1beta1.Machine
		reason v1beta1.DisruptionReason
		exempt bool
	}{
		{"a set shrinking", machine("a", 0), v1beta1.DisruptionScaleDown, false},
		{"marked by the autoscaler", machine("a", 0, func(m *v1beta1.Machine) {
			m.Annotations = map[string]string{v1beta1.DeleteMachineAnnotation: "yes"}
		}), v1beta1.DisruptionScaleDown, false},
		{"an old template", machine("a", 0, outdated(uptodate.ReasonTemplateChanged)), v1beta1.DisruptionRollout, false},
		{"an edited class", machine("a", 0, outdated(uptodate.ReasonMachineClassChanged)), v1beta1.DisruptionClassChange, false},
		{"past rollout.after", machine("a", 0, outdated(uptodate.ReasonRolloutAfter)), v1beta1.DisruptionExpired, false},
		{"past its max age", machine("a", 0, outdated(uptodate.ReasonMaxAgeExceeded)), v1beta1.DisruptionExpired, false},
		{"a health check's verdict comes before outdated", machine("a", 0, outdated(uptodate.ReasonMaxAgeExceeded), requestedByHealthCheck), v1beta1.DisruptionRemediation, false},
		{"no Node", machine("a", 0, noNode, requestedByHealthCheck), "", true},
		{"its instance vanished", machine("a", 0, missing, requestedByHealthCheck), "", true},
		{"its instance is interrupted", machine("a", 0, interruptedAt(t0)), "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, exempt := disruptionOf(tc.m)
			if reason != tc.reason || (exempt != "") != tc.exempt {
				t.Errorf("disruptionOf = %q, exempt %q; want %q, exempt %t", reason, exempt, tc.reason, tc.exempt)
			}
		})
	}
}

// TestGateCountsWhatTheCacheDoesNotShowYet protects the budget against a cache a moment behind: a
// deletion this process requested counts until the cache shows the Machine deleting (then it
// counts from the cache, once) or gone, and is forgotten after recentDeletion.
func TestGateCountsWhatTheCacheDoesNotShowYet(t *testing.T) {
	a, b, c, d := machine("a", 0), machine("b", 0), machine("c", 0, beingDeleted), machine("d", 0, beingDeleted, noNode)
	p := &pool{key: "pool", machines: []*v1beta1.Machine{a, b, c, d}}
	g := &budgetGate{}
	if n := g.disrupting(p, t0); n != 1 {
		t.Fatalf("before any deletion: %d disrupting, want 1 (c; d has no Node)", n)
	}
	g.remember("pool", []*v1beta1.Machine{a, b}, &scope{now: t0, deleted: []string{"a"}})
	if n := g.disrupting(p, t0.Add(time.Second)); n != 2 {
		t.Fatalf("a deleted, not in the cache yet: %d disrupting, want 2 (b's delete did not happen)", n)
	}
	a2 := machine("a", 0, beingDeleted)
	p.machines = []*v1beta1.Machine{a2, b, c, d}
	if n := g.disrupting(p, t0.Add(2*time.Second)); n != 2 {
		t.Fatalf("a deleting in the cache: %d disrupting, want 2 (counted once)", n)
	}
	if len(g.allowed["pool"]) != 0 {
		t.Errorf("the gate still remembers %v once the cache shows it", g.allowed["pool"])
	}
	g.remember("pool", []*v1beta1.Machine{b}, &scope{now: t0, deleted: []string{"b"}})
	if n := g.disrupting(p, t0.Add(recentDeletion+time.Second)); n != 2 {
		t.Errorf("a deletion the cache never showed counts for recentDeletion only: %d disrupting, want 2", n)
	}
	if _, ok := g.allowed["pool"][types.UID("uid-b")]; ok {
		t.Error("an old deletion is still remembered")
	}
}
