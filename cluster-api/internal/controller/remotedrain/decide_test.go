package remotedrain

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// machine is a remote Machine of Cluster "c" with a Node, not deleting, without hooks; edit
// applies changes.
func machine(edit ...func(*machinev1.Machine)) *machinev1.Machine {
	m := &machinev1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Labels: map[string]string{
			v1beta1.ClusterNameLabel: "c", v1beta1.RemoteNodesLabel: "true",
		}},
		Status: machinev1.MachineStatus{NodeRef: &machinev1.NodeReference{Kind: "Node", Name: "n1"}},
	}
	for _, e := range edit {
		e(m)
	}
	return m
}

func deleting(m *machinev1.Machine) { m.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
func hooked(m *machinev1.Machine) {
	m.Spec.LifecycleHooks.PreDrain = append(m.Spec.LifecycleHooks.PreDrain, machinev1.LifecycleHook{Name: v1beta1.DrainHookName, Owner: v1beta1.DrainHookOwner})
}
func timeout(s int32) func(*machinev1.Machine) {
	return func(m *machinev1.Machine) {
		m.Spec.Deletion = &machinev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To(s)}
	}
}
func otherHook(m *machinev1.Machine) {
	m.Spec.LifecycleHooks.PreDrain = append(m.Spec.LifecycleHooks.PreDrain, machinev1.LifecycleHook{Name: "backup", Owner: "someone"})
}

// drainCondition sets the WorkloadNodeDrained condition this controller writes, with its
// transition time.
func drainCondition(status metav1.ConditionStatus, since time.Time) func(*machinev1.Machine) {
	return func(m *machinev1.Machine) {
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{
			Type: v1beta1.WorkloadNodeDrainedCondition, Status: status, Reason: ReasonDraining, LastTransitionTime: metav1.NewTime(since),
		})
	}
}
func annotated(k string) func(*machinev1.Machine) {
	return func(m *machinev1.Machine) { m.Annotations = map[string]string{k: ""} }
}

func TestNeedsHold(t *testing.T) {
	tests := map[string]struct {
		m    *machinev1.Machine
		want bool
	}{
		"a live remote Machine without the hook is held":                     {machine(), true},
		"one that has it already is not patched again":                       {machine(hooked), false},
		"a deleting Machine cannot be held (machine-api refuses hooks then)": {machine(deleting), false},
		"a paused Machine is left alone":                                     {machine(annotated(machinev1.PausedAnnotation)), false},
		"a Machine whose Node is in the management cluster is not held": {machine(func(m *machinev1.Machine) {
			delete(m.Labels, v1beta1.RemoteNodesLabel)
		}), false},
		"remote-nodes=false is not remote": {machine(func(m *machinev1.Machine) { m.Labels[v1beta1.RemoteNodesLabel] = "false" }), false},
		"a remote Machine of no Cluster has no workload cluster to drain in": {machine(func(m *machinev1.Machine) {
			delete(m.Labels, v1beta1.ClusterNameLabel)
		}), false},
		"other owners' hooks do not count": {machine(func(m *machinev1.Machine) {
			m.Spec.LifecycleHooks.PreDrain = []machinev1.LifecycleHook{{Name: "backup", Owner: "someone"}}
		}), true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := needsHold(tt.m); got != tt.want {
				t.Errorf("needsHold = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	live := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	goingAway := live.DeepCopy()
	goingAway.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	now := t0.Add(time.Hour) // an hour after the deletion
	tests := map[string]struct {
		m        *machinev1.Machine
		cluster  *v1beta1.Cluster
		want     drain.NodeDecision
		reason   string
		contains string
	}{
		"a Machine with a Node of a live Cluster is drained, starting now": {
			m: machine(deleting, hooked), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true},
		},
		"exclude-node-draining lets it go": {
			m: machine(deleting, hooked, annotated(machinev1.ExcludeNodeDrainingAnnotation)), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeSkip}, reason: ReasonDrainExcluded, contains: machinev1.ExcludeNodeDrainingAnnotation,
		},
		"no Node, nothing to drain": {
			m: machine(deleting, hooked, func(m *machinev1.Machine) { m.Status.NodeRef = nil }), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeSkip}, reason: ReasonNoNode, contains: "no Node",
		},
		"the Cluster is being deleted: the whole workload cluster goes": {
			m: machine(deleting, hooked), cluster: goingAway,
			want: drain.NodeDecision{Action: drain.NodeSkip}, reason: ReasonClusterDeleting, contains: "Cluster c is being deleted",
		},
		"the Cluster is gone": {
			m: machine(deleting, hooked), cluster: nil,
			want: drain.NodeDecision{Action: drain.NodeSkip}, reason: ReasonClusterNotFound, contains: "Cluster c is gone",
		},
		"another preDrain hook holds the drain, before anything else": {
			m: machine(deleting, hooked, otherHook, timeout(60)), cluster: goingAway,
			want: drain.NodeDecision{Action: drain.NodeWait},
		},
		"waiting for other hooks (Unknown) is not draining: it starts once they are gone": {
			m: machine(deleting, hooked, timeout(60), drainCondition(metav1.ConditionUnknown, t0)), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now, Started: true, Deadline: now.Add(time.Minute)},
		},
		"nodeDrainTimeoutSeconds counts from the start of draining, not from the deletion": {
			m: machine(deleting, hooked, timeout(60), drainCondition(metav1.ConditionFalse, now.Add(-30*time.Second))), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: now.Add(-30 * time.Second), Deadline: now.Add(30 * time.Second)},
		},
		"it gives up once that long has passed since draining began": {
			m: machine(deleting, hooked, timeout(60), drainCondition(metav1.ConditionFalse, now.Add(-time.Minute))), cluster: live,
			want: drain.NodeDecision{Action: drain.NodeGiveUp, StartedAt: now.Add(-time.Minute), Deadline: now},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := decide(tt.m, tt.cluster, now)
			if p.decision != tt.want {
				t.Errorf("decision = %+v, want %+v", p.decision, tt.want)
			}
			if tt.want.Action == drain.NodeSkip && (p.skipReason != tt.reason || !strings.Contains(p.request.Skip, tt.contains)) {
				t.Errorf("skip = %q, %q; want %q and a message containing %q", p.skipReason, p.request.Skip, tt.reason, tt.contains)
			}
		})
	}
}

func TestDrainDeadline(t *testing.T) {
	deadline := t0.Add(time.Minute)
	tests := map[string]struct {
		d       drain.NodeDecision
		now     time.Time
		next    time.Time // the step's Result.NextDeletion
		requeue time.Duration
		letGo   string
	}{
		"no deadline: polls, and says how to let the Machine go": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0}, now: t0.Add(time.Hour), requeue: drainPoll,
			letGo: "annotate it " + machinev1.ExcludeNodeDrainingAnnotation + " or remove its preDrain hook " + v1beta1.DrainHookName,
		},
		"before the deadline: polls, and names it": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0, Deadline: deadline}, now: t0.Add(10 * time.Second), requeue: drainPoll,
			letGo: "gives up at 2030-01-02T03:05:05Z",
		},
		"close to the deadline: comes back at it": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0, Deadline: deadline}, now: t0.Add(58 * time.Second), requeue: 2 * time.Second,
			letGo: "gives up at",
		},
		"at the deadline: comes back a second later at the latest": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0, Deadline: deadline}, now: deadline, requeue: time.Second,
			letGo: "gives up at",
		},
		"a pod to be deleted (drainDeadlineSeconds) before the next poll: comes back when it is": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0}, now: t0, next: t0.Add(3 * time.Second), requeue: 3 * time.Second,
			letGo: "annotate it",
		},
		"a pod to be deleted after the next poll: polls": {
			d: drain.NodeDecision{Action: drain.NodeDrain, StartedAt: t0}, now: t0, next: t0.Add(time.Minute), requeue: drainPoll,
			letGo: "annotate it",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nextStep(tt.d, tt.next, tt.now); got != tt.requeue {
				t.Errorf("nextStep = %s, want %s", got, tt.requeue)
			}
			if got := letGo(tt.d); !strings.Contains(got, tt.letGo) {
				t.Errorf("letGo = %q, want it to contain %q", got, tt.letGo)
			}
		})
	}
}

func TestWithoutDrainHookKeepsOtherHooks(t *testing.T) {
	hooks := []machinev1.LifecycleHook{{Name: "a", Owner: "x"}, {Name: v1beta1.DrainHookName, Owner: v1beta1.DrainHookOwner}, {Name: "b", Owner: "y"}}
	got := withoutDrainHook(hooks)
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("withoutDrainHook = %v, want a and b", got)
	}
	if hooks[1].Name != v1beta1.DrainHookName {
		t.Errorf("withoutDrainHook changed its argument: %v", hooks)
	}
}
