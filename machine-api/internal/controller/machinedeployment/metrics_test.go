package machinedeployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestRollingOut: a rollout is in progress from the new set's creation until it is available,
// stalled ones included; a paused or complete deployment is not rolling out.
func TestRollingOut(t *testing.T) {
	for name, tc := range map[string]struct {
		status metav1.ConditionStatus
		reason string
		want   float64
	}{
		"new set created":            {metav1.ConditionTrue, ReasonNewSetCreated, 1},
		"set updated":                {metav1.ConditionTrue, ReasonSetUpdated, 1},
		"stalled past the deadline":  {metav1.ConditionFalse, ReasonDeadlineExceeded, 1},
		"blocked by a set name":      {metav1.ConditionFalse, ReasonSetNameTaken, 1},
		"stalled: not in place":      {metav1.ConditionFalse, ReasonInPlaceUnsupported, 1},
		"complete":                   {metav1.ConditionTrue, ReasonNewSetAvailable, 0},
		"paused":                     {metav1.ConditionUnknown, ReasonPaused, 0},
		"no condition yet (no type)": {"", "", 0},
	} {
		t.Run(name, func(t *testing.T) {
			md := &v1beta1.MachineDeployment{}
			if tc.status != "" {
				md.Status.Conditions = []metav1.Condition{{Type: v1beta1.ProgressingCondition, Status: tc.status, Reason: tc.reason}}
			}
			if got := rollingOut(md); got != tc.want {
				t.Fatalf("rollingOut = %v, want %v", got, tc.want)
			}
		})
	}
}
