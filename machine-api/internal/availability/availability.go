// Package availability decides whether a Machine is available: the one rule a MachineSet counts
// availableReplicas by and a MachineDeployment picks the Machines it replaces by.
package availability

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Of reports whether m is ready (its Ready condition is True) and available (ready for at least
// minReady, measured from the condition's last transition), and, for a ready Machine that is not
// available yet, how long until it is.
func Of(m *v1beta1.Machine, minReady time.Duration, now time.Time) (ready, available bool, wait time.Duration) {
	c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false, false, 0
	}
	wait = c.LastTransitionTime.Add(minReady).Sub(now)
	if wait <= 0 {
		return true, true, 0
	}
	return true, false, wait
}
