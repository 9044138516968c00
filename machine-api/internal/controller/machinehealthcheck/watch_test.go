package machinehealthcheck

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/nodelink"
)

// TestMachineChanged: the updates that can change a verdict reach the health check, the
// machine controller's routine status writes do not.
func TestMachineChanged(t *testing.T) {
	withLink := func(status metav1.ConditionStatus, reason string) func(*v1beta1.Machine) {
		return func(m *v1beta1.Machine) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: status, Reason: reason})
		}
	}
	tests := map[string]struct {
		from   func(*v1beta1.Machine) // the NodeLinked condition before; Linked when nil
		change func(*v1beta1.Machine)
		want   bool
	}{
		"nothing":                         {change: func(*v1beta1.Machine) {}, want: false},
		"lastUpdated only":                {change: func(m *v1beta1.Machine) { m.Status.LastUpdated = &metav1.Time{} }, want: false},
		"phase":                           {change: func(m *v1beta1.Machine) { m.Status.Phase = v1beta1.MachinePhaseFailed }, want: true},
		"the linker saw the Node deleted": {change: withLink(metav1.ConditionFalse, nodelink.ReasonNodeDeleted), want: true},
		"NodeLinked message only": {change: func(m *v1beta1.Machine) {
			m.Status.Conditions[0].Message = "another message"
		}, want: false},
		"the linker lost sight of the Nodes (workload API unreachable)": {
			from:   withLink(metav1.ConditionFalse, nodelink.ReasonWaitingForNode),
			change: withLink(metav1.ConditionUnknown, nodelink.ReasonNodesUnreachable), want: true,
		},
		"the linker sees the Nodes again, still none for the Machine": {
			from:   withLink(metav1.ConditionUnknown, nodelink.ReasonNodesUnreachable),
			change: withLink(metav1.ConditionFalse, nodelink.ReasonWaitingForNode), want: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := &v1beta1.Machine{}
			from := tc.from
			if from == nil {
				from = withLink(metav1.ConditionTrue, nodelink.ReasonLinked)
			}
			from(old)
			cur := old.DeepCopy()
			tc.change(cur)
			if got := machineChanged(old, cur); got != tc.want {
				t.Errorf("machineChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChangedConditions: a change of a Machine condition's status or transition time (or one
// appearing or going away) wakes the checks with a rule on its type; a message alone, or the
// check's own HealthCheckSucceeded, does not.
func TestChangedConditions(t *testing.T) {
	t0 := metav1.NewTime(now)
	base := func() *v1beta1.Machine {
		return &v1beta1.Machine{Status: v1beta1.MachineStatus{Conditions: []metav1.Condition{
			{Type: "InstanceHealthy", Status: metav1.ConditionTrue, Reason: "Ok", LastTransitionTime: t0},
			{Type: v1beta1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Ok", LastTransitionTime: t0},
		}}}
	}
	tests := map[string]struct {
		change func(*v1beta1.Machine)
		want   []string
	}{
		"nothing":      {change: func(*v1beta1.Machine) {}},
		"message only": {change: func(m *v1beta1.Machine) { m.Status.Conditions[0].Message = "still fine" }},
		"status": {change: func(m *v1beta1.Machine) {
			m.Status.Conditions[0].Status, m.Status.Conditions[0].LastTransitionTime = metav1.ConditionFalse, metav1.NewTime(now.Add(time.Second))
		}, want: []string{"InstanceHealthy"}},
		"a condition appears": {change: func(m *v1beta1.Machine) {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: "DiskHealthy", Status: metav1.ConditionFalse})
		}, want: []string{"DiskHealthy"}},
		"a condition goes away": {change: func(m *v1beta1.Machine) { m.Status.Conditions = m.Status.Conditions[1:] }, want: []string{"InstanceHealthy"}},
		"the check's own condition is not one": {change: func(m *v1beta1.Machine) {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, Status: metav1.ConditionFalse})
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			got := slices.Sorted(maps.Keys(changedConditions(old, cur)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("changedConditions = %v, want %v", got, tc.want)
			}
		})
	}
}
