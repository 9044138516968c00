package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
)

func interruptedAt(deadline time.Time) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		m.Status.Interruption = &v1beta1.MachineInterruption{Deadline: metav1.NewTime(deadline), Reason: "SpotReclaim"}
	}
}

// TestInterruptionDue protects when the set deletes an interrupted Machine: once its replacement
// is Running, or interruptionLead before the deadline, and not before; and how long it waits.
func TestInterruptionDue(t *testing.T) {
	now := t0.Add(time.Hour)
	victim := machine("v", 0, interruptedAt(now.Add(10*time.Minute)))
	tests := map[string]struct {
		victim, heir *v1beta1.Machine
		due          bool
		wait         time.Duration
	}{
		"no replacement yet: wait until the lead starts":           {victim: victim, wait: 8 * time.Minute},
		"a replacement not Running yet: wait":                      {victim: victim, heir: machine("h", 55, unlinked), wait: 8 * time.Minute},
		"a replacement Running: now":                               {victim: victim, heir: machine("h", 55), due: true},
		"the deadline within the lead: now, without a replacement": {victim: machine("v", 0, interruptedAt(now.Add(interruptionLead))), due: true},
		"the deadline passed: now":                                 {victim: machine("v", 0, interruptedAt(now.Add(-time.Minute))), heir: machine("h", 55, unlinked), due: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			due, why, wait := interruptionDue(tc.victim, tc.heir, now)
			if due != tc.due || wait != tc.wait || (due && why == "") {
				t.Errorf("due %v (%q), wait %s; want due %v, wait %s", due, why, wait, tc.due, tc.wait)
			}
		})
	}
}

// TestInheritByCause protects the lineage a replacement carries: an interruption hands on the
// count unchanged, a health check's request or a launch timeout counts one more.
func TestInheritByCause(t *testing.T) {
	now := t0.Add(time.Hour)
	counted := map[string]string{v1beta1.LineageAnnotation: "slot", v1beta1.LineageRetriesAnnotation: "2"}
	tests := map[string]struct {
		from    *v1beta1.Machine
		retries int
	}{
		"interrupted":               {from: machine("v", 0, interruptedAt(now.Add(time.Hour))), retries: 2},
		"interrupted and requested": {from: machine("v", 0, interruptedAt(now.Add(time.Hour)), requestedByHealthCheck), retries: 3},
		"did not launch in time":    {from: machine("v", 0, unlinked), retries: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.from.Annotations = counted
			set := testSet(1, func(s *v1beta1.MachineSet) {
				s.Spec.MachineLaunch = &v1beta1.MachineLaunch{TimeoutSeconds: 60}
			})
			s := &scope{set: set, machines: []*v1beta1.Machine{tc.from}, now: now}
			heir := &v1beta1.Machine{}
			s.inherit(heir, tc.from)
			if got := lineage.Of(heir); got.ID != "slot" || got.Retries != tc.retries || got.Replaces != "v" {
				t.Errorf("heir's lineage %+v, want slot with %d retries replacing v", got, tc.retries)
			}
		})
	}
}
