package machineset

import (
	"slices"
	"strings"
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

func doNotDisruptFor(value string) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[v1beta1.DoNotDisruptAnnotation] = value
	}
}

func heldSince(at time.Time) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1beta1.DeletingCondition, Status: metav1.ConditionFalse,
			Reason: ReasonDoNotDisrupt, LastTransitionTime: metav1.NewTime(at)})
	}
}

// TestDoNotDisrupt protects what the do-not-disrupt annotation holds: everything with "true" or
// no value, for its grace period counted from the start of the hold with a duration, and
// everything (saying why) with a value it cannot read.
func TestDoNotDisrupt(t *testing.T) {
	now := t0.Add(time.Hour)
	cases := []struct {
		name      string
		m         *v1beta1.Machine
		holds     bool
		until     time.Time
		inMessage string
	}{
		{"no annotation", machine("a", 0), false, time.Time{}, ""},
		{"true", machine("a", 0, doNotDisruptFor("true")), true, time.Time{}, "until it is removed"},
		{"empty", machine("a", 0, doNotDisruptFor("")), true, time.Time{}, "until it is removed"},
		{"a grace period starting now", machine("a", 0, doNotDisruptFor("30m")), true, now.Add(30 * time.Minute), "for 30m0s"},
		{"a grace period started earlier", machine("a", 0, doNotDisruptFor("30m"), heldSince(now.Add(-20*time.Minute))), true, now.Add(10 * time.Minute), "for 30m0s"},
		{"a grace period that ended", machine("a", 0, doNotDisruptFor("30m"), heldSince(now.Add(-30*time.Minute))), false, time.Time{}, ""},
		{"a value it cannot read", machine("a", 0, doNotDisruptFor("forever")), true, time.Time{}, `"forever" is neither`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, holds := doNotDisrupt(tc.m, now)
			if holds != tc.holds || !v.Until.Equal(tc.until) {
				t.Fatalf("doNotDisrupt = %t until %v; want %t until %v", holds, v.Until, tc.holds, tc.until)
			}
			if !strings.Contains(v.Message, tc.inMessage) {
				t.Errorf("message %q does not say %q", v.Message, tc.inMessage)
			}
		})
	}
}

// TestDoNotDisruptIsChosenLast protects scale-down from a protected Machine: the set picks every
// other Machine first, unless someone marked the protected one for deletion.
func TestDoNotDisruptIsChosenLast(t *testing.T) {
	machines := []*v1beta1.Machine{machine("kept", 1, doNotDisruptFor("true")), machine("sick", 2, noNode), machine("plain", 3)}
	if got := namesOf(pickForDeletion(machines, 2, v1beta1.NewestDeletePolicy)); !slices.Equal(got, []string{"sick", "plain"}) {
		t.Errorf("picked %v, want the unprotected Machines", got)
	}
	marked := machine("kept", 1, doNotDisruptFor("true"), annotated)
	if got := namesOf(pickForDeletion([]*v1beta1.Machine{machine("plain", 3), marked}, 1, v1beta1.NewestDeletePolicy)); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("picked %v, want the Machine marked for deletion, protected or not", got)
	}
}

// TestDoNotDisruptTheCacheDoesNotShowYet protects the race a person meets who protects a Machine
// and scales down right after: the set shrinks from a cache that shows the new replicas but not yet
// the annotation, and must still hold the Machine, because the marks are read from the API server.
func TestDoNotDisruptTheCacheDoesNotShowYet(t *testing.T) {
	cached := []*v1beta1.Machine{machine("a", 0), machine("b", 1)}
	fresh := []v1beta1.Machine{*machine("a", 0, annotated, doNotDisruptFor("6s")), *machine("b", 1)}
	got := withMarks(cached, fresh)
	if _, holds := doNotDisrupt(got[0], t0); !holds {
		t.Fatalf("a is not held: its annotations as merged are %v", got[0].Annotations)
	}
	if markedDoNotDisrupt(cached[0]) {
		t.Fatal("the cached Machine was modified")
	}
	if got[1] != cached[1] {
		t.Error("a Machine whose marks did not change was copied")
	}
}
