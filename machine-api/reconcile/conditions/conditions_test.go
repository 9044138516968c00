package conditions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
)

var (
	t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func cond(status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: reason, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(at)}
}

func TestSet(t *testing.T) {
	tests := map[string]struct {
		before  []metav1.Condition
		set     metav1.Condition
		want    metav1.Condition
		changed bool
	}{
		"a new condition transitions now": {
			set: cond(metav1.ConditionTrue, "Up", time.Time{}), want: cond(metav1.ConditionTrue, "Up", t1), changed: true},
		"a status change transitions now": {
			before: []metav1.Condition{cond(metav1.ConditionFalse, "Down", t0)},
			set:    cond(metav1.ConditionTrue, "Up", time.Time{}), want: cond(metav1.ConditionTrue, "Up", t1), changed: true},
		"the same status keeps its transition time, whatever else changes": {
			before: []metav1.Condition{cond(metav1.ConditionFalse, "Down", t0)},
			set:    cond(metav1.ConditionFalse, "StillDown", time.Time{}), want: cond(metav1.ConditionFalse, "StillDown", t0), changed: true},
		"nothing new changes nothing": {
			before: []metav1.Condition{cond(metav1.ConditionFalse, "Down", t0)},
			set:    cond(metav1.ConditionFalse, "Down", t1), want: cond(metav1.ConditionFalse, "Down", t0), changed: false},
		"a time passed in is ignored: it is now's": {
			set: cond(metav1.ConditionTrue, "Up", t0), want: cond(metav1.ConditionTrue, "Up", t1), changed: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.before...)
			if changed := Set(&conds, tc.set, t1); changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if len(conds) != 1 || !equality.Semantic.DeepEqual(conds[0], tc.want) {
				t.Errorf("conditions %+v, want [%+v]", conds, tc.want)
			}
		})
	}
}

func TestRestart(t *testing.T) {
	conds := []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue, Reason: "X"}, cond(metav1.ConditionTrue, "Progressing", t0)}
	if !Restart(&conds, cond(metav1.ConditionTrue, "Progressing", time.Time{}), t1) {
		t.Fatal("restarting a condition at a new time changed nothing")
	}
	if len(conds) != 2 || conds[1].LastTransitionTime.Time != t1 || conds[0].Type != "Other" {
		t.Fatalf("conditions %+v: want Ready restarted at %s, Other kept", conds, t1)
	}
	if Restart(&conds, cond(metav1.ConditionTrue, "Progressing", time.Time{}), t1) {
		t.Error("restarting a condition at the time it has reported a change")
	}
}

func TestApplyConfigurations(t *testing.T) {
	conds := []metav1.Condition{cond(metav1.ConditionTrue, "Up", t0), {Type: "NodeLinked", Status: metav1.ConditionTrue, Reason: "Linked"}}
	got := ApplyConfigurations(conds, "Ready")
	want := []*metav1ac.ConditionApplyConfiguration{{
		Type: ptr.To("Ready"), Status: ptr.To(metav1.ConditionTrue), ObservedGeneration: ptr.To[int64](1),
		LastTransitionTime: ptr.To(metav1.NewTime(t0)), Reason: ptr.To("Up"), Message: ptr.To("Up"),
	}}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("owned Ready only: got %+v", got)
	}
	if all := ApplyConfigurations(conds); len(all) != 2 || *all[1].Type != "NodeLinked" {
		t.Errorf("no type given: got %d configurations, want every condition", len(all))
	}
}
