package remotedrain

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

func TestConditionAndEvents(t *testing.T) {
	earlier := metav1.NewTime(t0.Add(-time.Minute))
	waitingPDB := &metav1.Condition{Type: v1beta1.WorkloadNodeDrainedCondition, Status: metav1.ConditionFalse, Reason: ReasonDraining, Message: "blocked by web", LastTransitionTime: earlier, ObservedGeneration: 1}
	tests := map[string]struct {
		o          outcome
		prev       *metav1.Condition
		status     metav1.ConditionStatus
		transition metav1.Time
		event      bool
		write      bool
	}{
		"the first wait is reported": {
			o: outcome{reason: ReasonDraining, message: "blocked by web"}, status: metav1.ConditionFalse, transition: metav1.NewTime(t0), event: true, write: true,
		},
		"another poll of the same state: no event, no write": {
			o: outcome{reason: ReasonDraining, message: "blocked by web"}, prev: waitingPDB, status: metav1.ConditionFalse, transition: earlier,
		},
		"the drain's state changed: an event, and the transition time is kept": {
			o: outcome{reason: ReasonDraining, message: "1 pod remaining"}, prev: waitingPDB, status: metav1.ConditionFalse, transition: earlier, event: true, write: true,
		},
		"the workload API went away: an event": {
			o: outcome{reason: ReasonDrainFailed, message: "blocked by web"}, prev: waitingPDB, status: metav1.ConditionFalse, transition: earlier, event: true, write: true,
		},
		"other hooks hold the drain: Unknown": {
			o: outcome{waiting: true, reason: ReasonWaitingForPreDrainHooks, message: "waiting for backup"}, status: metav1.ConditionUnknown, transition: metav1.NewTime(t0), event: true, write: true,
		},
		"the first drain step after the wait turns it False now: the start of draining": {
			o:      outcome{reason: ReasonDraining, message: "1 pod remaining"},
			prev:   &metav1.Condition{Type: v1beta1.WorkloadNodeDrainedCondition, Status: metav1.ConditionUnknown, Reason: ReasonWaitingForPreDrainHooks, Message: "waiting for backup", LastTransitionTime: earlier, ObservedGeneration: 1},
			status: metav1.ConditionFalse, transition: metav1.NewTime(t0), event: true, write: true,
		},
		"released: True, with an event": {
			o: outcome{released: true, reason: ReasonDrained, message: "drained"}, prev: waitingPDB, status: metav1.ConditionTrue, transition: metav1.NewTime(t0), event: true, write: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var conds []metav1.Condition
			if tt.prev != nil {
				conds = []metav1.Condition{{Type: machinev1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Running"}, *tt.prev}
			}
			c, changed := conditionFor(&tt.o, conds, 1, t0)
			if c.Status != tt.status || !c.LastTransitionTime.Equal(&tt.transition) {
				t.Errorf("condition = %s since %s, want %s since %s", c.Status, c.LastTransitionTime, tt.status, tt.transition)
			}
			if got := needsEvent(&tt.o, tt.prev); got != tt.event {
				t.Errorf("needsEvent = %v, want %v", got, tt.event)
			}
			if got := changed; got != tt.write {
				t.Errorf("write = %v, want %v", got, tt.write)
			}
		})
	}
}

func TestStableSummaryIgnoresElapsedTime(t *testing.T) {
	res := func(elapsed time.Duration) *drain.Result {
		return &drain.Result{Node: "n1", Remaining: []types.NamespacedName{{Namespace: "default", Name: "web-0"}}, Elapsed: elapsed}
	}
	if a, b := stableSummary(res(5*time.Second)), stableSummary(res(10*time.Second)); a != b {
		t.Errorf("summaries differ with the elapsed time only: %q, %q", a, b)
	}
	if res(5*time.Second).Summary() == res(10*time.Second).Summary() {
		t.Errorf("drain.Result.Summary no longer names the elapsed time: stableSummary may go")
	}
}
