package machinehealthcheck

import (
	"testing"

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
