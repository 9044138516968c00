package machineset

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// unlinked makes m a Machine whose instance exists but whose Node never came.
func unlinked(m *v1beta1.Machine) {
	m.Status.Phase = v1beta1.MachinePhaseProvisioned
	m.Status.NodeRef = nil
	m.Status.Conditions = []metav1.Condition{
		{Type: v1beta1.InstanceProvisionedCondition, Status: metav1.ConditionTrue, Reason: "Provisioned"},
		{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionFalse, Reason: "WaitingForNode", Message: "no Node has providerID sim://x"},
	}
}

func linkUnknownNow(m *v1beta1.Machine) {
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionUnknown, Reason: "NodesUnreachable"})
}

func retries(n int) func(*v1beta1.Machine) {
	return func(m *v1beta1.Machine) {
		m.Annotations = map[string]string{v1beta1.LineageAnnotation: "slot", v1beta1.LineageRetriesAnnotation: strconv.Itoa(n)}
	}
}

func requestedByHealthCheck(m *v1beta1.Machine) {
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.OwnerRemediatedCondition, Status: metav1.ConditionFalse,
		Reason: v1beta1.RemediationRequestedReason})
}

// TestLaunches protects which Machines a set with spec.machineLaunch replaces for not reaching
// Running in time, which it keeps because their slot spent its retries, what its
// MachinesProvisioned condition says, and when it comes back to judge the next one.
func TestLaunches(t *testing.T) {
	launch := func(timeout int32, maxRetries *int32) func(*v1beta1.MachineSet) {
		return func(s *v1beta1.MachineSet) {
			s.Spec.MachineLaunch = &v1beta1.MachineLaunch{TimeoutSeconds: timeout, MaxRetries: maxRetries}
		}
	}
	now := t0.Add(30 * time.Minute) // Machines created at minute 0 are 30 minutes old
	tests := map[string]struct {
		set      *v1beta1.MachineSet
		machines []*v1beta1.Machine
		replace  []string
		stuck    []string // oldest first
		next     time.Duration
		cond     string // status/reason, "" for absent
		mentions []string
	}{
		"without machineLaunch nothing is judged and the condition is absent": {
			set:      testSet(2),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked)},
		},
		"a running Machine is never stuck, however old": {
			set:      testSet(1, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0)},
			cond:     "True/" + ReasonMachinesLaunched,
		},
		"a Machine whose Node was linked once and then deleted is not stuck (health checks judge it)": {
			set: testSet(1, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, func(m *v1beta1.Machine) {
				m.Status.Phase = v1beta1.MachinePhaseProvisioned
				meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionFalse, Reason: "NodeDeleted"})
			})},
			cond: "True/" + ReasonMachinesLaunched,
		},
		"a Machine within its timeout is waited for, until its deadline": {
			set:      testSet(1, launch(3600, nil)),
			machines: []*v1beta1.Machine{machine("a", 10, unlinked)},
			next:     40 * time.Minute,
			cond:     "True/" + ReasonMachinesLaunched,
		},
		"Machines past their timeout are replaced; the oldest is named with where it stopped": {
			set:      testSet(3, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("b", 5, unlinked), machine("a", 2, unlinked), machine("c", 25, unlinked)},
			replace:  []string{"a", "b"},
			stuck:    []string{"a", "b"},
			next:     5 * time.Minute,
			cond:     "False/" + ReasonLaunchTimedOut,
			mentions: []string{"2 Machines", "the oldest, a, was created 28m0s ago", "NodeLinked False, WaitingForNode: no Node has providerID sim://x"},
		},
		"a Machine with no status at all (the provider never answered) is stuck too": {
			set:      testSet(1, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, func(m *v1beta1.Machine) { m.Status = v1beta1.MachineStatus{} })},
			replace:  []string{"a"},
			stuck:    []string{"a"},
			cond:     "False/" + ReasonLaunchTimedOut,
			mentions: []string{"is without a phase (no InstanceProvisioned condition yet)"},
		},
		"a Failed Machine says the provider's message": {
			set: testSet(1, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked, func(m *v1beta1.Machine) {
				m.Status.Phase = v1beta1.MachinePhaseFailed
				m.Status.FailureMessage = ptr.To("image not found")
			})},
			replace:  []string{"a"},
			stuck:    []string{"a"},
			cond:     "False/" + ReasonLaunchTimedOut,
			mentions: []string{"is Failed: image not found"},
		},
		"a slot that spent its retries (default 3) keeps its Machine and says so": {
			set:      testSet(2, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked, retries(3)), machine("b", 1, unlinked, retries(2))},
			replace:  []string{"b"},
			stuck:    []string{"a", "b"},
			cond:     "False/" + ReasonLaunchRetriesExhausted,
			mentions: []string{"1 are kept", "maxRetries (3)", ": a."},
		},
		"maxRetries 0 only reports": {
			set:      testSet(1, launch(600, ptr.To[int32](0))),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked)},
			stuck:    []string{"a"},
			cond:     "False/" + ReasonLaunchRetriesExhausted,
		},
		"while the Nodes are out of sight nothing is judged": {
			set:      testSet(1, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked, linkUnknownNow)},
			cond:     "True/" + ReasonMachinesLaunched,
		},
		"deleting Machines and those a health check already asked to replace are left to that": {
			set:      testSet(2, launch(600, nil)),
			machines: []*v1beta1.Machine{machine("a", 0, unlinked, deleting), machine("b", 0, unlinked, requestedByHealthCheck)},
			cond:     "True/" + ReasonMachinesLaunched,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &scope{set: tc.set, machines: tc.machines, now: now}
			l := s.launchesOf()
			var replace []string
			for n := range l.replace {
				replace = append(replace, n)
			}
			slices.Sort(replace)
			if !slices.Equal(replace, tc.replace) {
				t.Errorf("replaced %v, want %v", replace, tc.replace)
			}
			var stuck []string
			for _, m := range l.stuck {
				stuck = append(stuck, m.Name)
			}
			if !slices.Equal(stuck, tc.stuck) {
				t.Errorf("stuck %v, want %v", stuck, tc.stuck)
			}
			if l.next != tc.next {
				t.Errorf("next due in %s, want %s", l.next, tc.next)
			}
			for _, m := range tc.machines {
				if active := slices.Contains(s.active(), m); active == (slices.Contains(tc.replace, m.Name) || !m.DeletionTimestamp.IsZero() || requested(m)) {
					t.Errorf("Machine %s counts toward replicas: %v", m.Name, active)
				}
			}
			c, ok := machinesProvisioned(s)
			got := ""
			if ok {
				got = string(c.Status) + "/" + c.Reason
			}
			if got != tc.cond {
				t.Errorf("MachinesProvisioned %s, want %s (%s)", got, tc.cond, c.Message)
			}
			for _, want := range tc.mentions {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q does not mention %q", c.Message, want)
				}
			}
		})
	}
}

func requested(m *v1beta1.Machine) bool {
	return meta.IsStatusConditionFalse(m.Status.Conditions, v1beta1.OwnerRemediatedCondition)
}
