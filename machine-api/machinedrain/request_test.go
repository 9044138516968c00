package machinedrain_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"
)

// TestRequest protects how a Machine is read for the drain policy: which hooks hold the drain,
// what skips it, and what bounds it.
func TestRequest(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	started := metav1.NewTime(now.Add(-time.Minute))
	machine := func(edit ...func(*v1beta1.Machine)) *v1beta1.Machine {
		m := &v1beta1.Machine{Status: v1beta1.MachineStatus{NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: "n1"}}}
		for _, e := range edit {
			e(m)
		}
		return m
	}
	hooks := func(m *v1beta1.Machine) {
		m.Spec.LifecycleHooks.PreDrain = []v1beta1.LifecycleHook{{Name: "backup", Owner: "ops"}, {Name: "mine", Owner: "me"}}
	}
	tests := map[string]struct {
		m          *v1beta1.Machine
		own        string
		startedAt  *metav1.Time
		heldBy     []string
		skip       skipWant
		timeout    time.Duration
		deadline   time.Duration
		startedWas time.Time
	}{
		"a Machine with a Node and nothing else: drained without a bound": {m: machine()},
		"without an own hook, every preDrain hook holds the drain": {
			m: machine(hooks), heldBy: []string{"backup (owner ops)", "mine (owner me)"},
		},
		"the caller's own hook does not hold its drain": {
			m: machine(hooks), own: "mine", heldBy: []string{"backup (owner ops)"},
		},
		"exclude-node-draining skips it": {
			m:    machine(func(m *v1beta1.Machine) { m.Annotations = map[string]string{v1beta1.ExcludeNodeDrainingAnnotation: ""} }),
			skip: skipWant{machinedrain.SkipExcluded, "draining skipped: the machine has the machine.machineapi.dev/exclude-node-draining annotation"},
		},
		"no status.nodeRef skips it": {
			m:    machine(func(m *v1beta1.Machine) { m.Status.NodeRef = nil }),
			skip: skipWant{machinedrain.SkipNoNode, "draining skipped: the machine has no Node"},
		},
		"nodeDrainTimeoutSeconds bounds it from the caller's start": {
			m: machine(func(m *v1beta1.Machine) {
				m.Spec.Deletion = &v1beta1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](90)}
			}),
			startedAt: &started, timeout: 90 * time.Second, startedWas: started.Time,
		},
		"drainDeadlineSeconds is the pod deadline, from the same start": {
			m: machine(func(m *v1beta1.Machine) {
				m.Spec.Deletion = &v1beta1.MachineDeletionSpec{DrainDeadlineSeconds: ptr.To[int32](60)}
			}),
			startedAt: &started, deadline: time.Minute, startedWas: started.Time,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := machinedrain.Request(tc.m, tc.own, tc.startedAt, now)
			if !slices.Equal(r.HeldBy, tc.heldBy) {
				t.Errorf("HeldBy = %q, want %q", r.HeldBy, tc.heldBy)
			}
			reason, msg := machinedrain.Skip(tc.m)
			if got := (skipWant{reason, msg}); got != tc.skip || r.Skip != tc.skip.message {
				t.Errorf("Skip = %v and request Skip %q, want %v", got, r.Skip, tc.skip)
			}
			if r.Timeout != tc.timeout || r.PodDeadline != tc.deadline || !r.StartedAt.Equal(tc.startedWas) || !r.Now.Equal(now) {
				t.Errorf("Timeout, PodDeadline, StartedAt, Now = %s, %s, %s, %s; want %s, %s, %s, %s",
					r.Timeout, r.PodDeadline, r.StartedAt, r.Now, tc.timeout, tc.deadline, tc.startedWas, now)
			}
		})
	}
}

// skipWant is what Skip should return.
type skipWant struct {
	reason  machinedrain.SkipReason
	message string
}

// TestLocalRequest protects machine-manager's own request: every preDrain hook holds its drain,
// and draining began at status.deletion.nodeDrainStartTime.
func TestLocalRequest(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &v1beta1.Machine{
		Spec: v1beta1.MachineSpec{LifecycleHooks: v1beta1.LifecycleHooks{PreDrain: []v1beta1.LifecycleHook{{Name: "drain-workload-node", Owner: "cluster-manager"}}}},
	}
	if r := machinedrain.LocalRequest(m, now); !r.StartedAt.IsZero() || !slices.Equal(r.HeldBy, []string{"drain-workload-node (owner cluster-manager)"}) {
		t.Errorf("LocalRequest without a start = %+v, want no start and the hook holding it", r)
	}
	m.Status.Deletion = &v1beta1.MachineDeletionStatus{NodeDrainStartTime: ptr.To(metav1.NewTime(now.Add(-time.Minute)))}
	if r := machinedrain.LocalRequest(m, now); !r.StartedAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("LocalRequest StartedAt = %s, want status.deletion.nodeDrainStartTime %s", r.StartedAt, now.Add(-time.Minute))
	}
}
