package machineset

import (
	"testing"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestStarting(t *testing.T) {
	phase := func(p v1beta1.MachinePhase) func(*v1beta1.Machine) {
		return func(m *v1beta1.Machine) { m.Status.Phase = p }
	}
	now := t0.Add(10 * time.Minute)
	tests := map[string]struct {
		machines []*v1beta1.Machine
		created  int
		want     int
		next     time.Duration
	}{
		"Running and Failed Machines are not starting": {
			machines: []*v1beta1.Machine{machine("a", 9), machine("b", 9, failed)}, want: 0,
		},
		"Pending, Provisioning and Provisioned ones are, until 5 minutes after their creation": {
			machines: []*v1beta1.Machine{machine("a", 9, phase("")), machine("b", 8, phase(v1beta1.MachinePhaseProvisioning)),
				machine("c", 7, phase(v1beta1.MachinePhaseProvisioned))},
			want: 3, next: 2 * time.Minute,
		},
		"one stuck for 5 minutes no longer counts": {
			machines: []*v1beta1.Machine{machine("a", 5, phase(v1beta1.MachinePhaseProvisioned)), machine("b", 9, phase(""))},
			want:     1, next: 4 * time.Minute,
		},
		"deleting ones do not count, those created by this reconcile do": {
			machines: []*v1beta1.Machine{machine("a", 9, phase(""), deleting)}, created: 2, want: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &scope{machines: tc.machines, created: tc.created, now: now, set: &v1beta1.MachineSet{}}
			n, next := starting(s)
			if n != tc.want || next != tc.next {
				t.Errorf("starting = %d, next in %s; want %d, %s", n, next, tc.want, tc.next)
			}
		})
	}
}
