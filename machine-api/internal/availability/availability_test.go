package availability

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestOf(t *testing.T) {
	now := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	machine := func(status metav1.ConditionStatus, since time.Duration) *v1beta1.Machine {
		return &v1beta1.Machine{Status: v1beta1.MachineStatus{Conditions: []metav1.Condition{{
			Type: v1beta1.ReadyCondition, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since)),
		}}}}
	}
	cases := map[string]struct {
		m                *v1beta1.Machine
		minReady         time.Duration
		ready, available bool
		wait             time.Duration
	}{
		"no Ready condition":             {m: &v1beta1.Machine{}, minReady: 0},
		"not ready":                      {m: machine(metav1.ConditionFalse, time.Hour)},
		"ready, no minReadySeconds":      {m: machine(metav1.ConditionTrue, 0), ready: true, available: true},
		"ready for less than minReady":   {m: machine(metav1.ConditionTrue, 10*time.Second), minReady: 30 * time.Second, ready: true, wait: 20 * time.Second},
		"ready for exactly minReady":     {m: machine(metav1.ConditionTrue, 30*time.Second), minReady: 30 * time.Second, ready: true, available: true},
		"ready for longer than minReady": {m: machine(metav1.ConditionTrue, time.Hour), minReady: 30 * time.Second, ready: true, available: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, available, wait := Of(tc.m, tc.minReady, now)
			if ready != tc.ready || available != tc.available || wait != tc.wait {
				t.Fatalf("Of = (%v, %v, %v), want (%v, %v, %v)", ready, available, wait, tc.ready, tc.available, tc.wait)
			}
		})
	}
}
