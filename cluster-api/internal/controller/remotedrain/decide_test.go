package remotedrain

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

func TestNothingToDrain(t *testing.T) {
	live := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	goingAway := live.DeepCopy()
	goingAway.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	tests := map[string]struct {
		m        *machinev1.Machine
		cluster  *v1beta1.Cluster
		reason   string
		contains string
	}{
		"a Machine with a Node of a live Cluster is drained": {machine(deleting, hooked), live, "", ""},
		"exclude-node-draining lets it go": {machine(deleting, hooked, annotated(machinev1.ExcludeNodeDrainingAnnotation)), live,
			ReasonDrainExcluded, machinev1.ExcludeNodeDrainingAnnotation},
		"no Node, nothing to drain": {machine(deleting, hooked, func(m *machinev1.Machine) { m.Status.NodeRef = nil }), live,
			ReasonNoNode, "no Node"},
		"the Cluster is being deleted: the whole workload cluster goes": {machine(deleting, hooked), goingAway,
			ReasonClusterDeleting, "Cluster c is being deleted"},
		"the Cluster is gone": {machine(deleting, hooked), nil, ReasonClusterNotFound, "Cluster c is gone"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			reason, msg := nothingToDrain(tt.m, tt.cluster)
			if reason != tt.reason || !strings.Contains(msg, tt.contains) {
				t.Errorf("nothingToDrain = %q, %q; want %q and a message containing %q", reason, msg, tt.reason, tt.contains)
			}
		})
	}
}

func TestDrainDeadline(t *testing.T) {
	tests := map[string]struct {
		m        *machinev1.Machine
		now      time.Time
		ok       bool
		timedOut bool
		requeue  time.Duration
		letGo    string
	}{
		"no timeout: waits, and says how to let the Machine go": {
			m: machine(deleting, hooked), now: t0.Add(time.Hour), requeue: drainPoll, letGo: "annotate it " + machinev1.ExcludeNodeDrainingAnnotation,
		},
		"timeout 0 means no timeout": {
			m: machine(deleting, hooked, timeout(0)), now: t0.Add(time.Hour), requeue: drainPoll, letGo: "remove its preDrain hook " + v1beta1.DrainHookName,
		},
		"before the deadline: waits, polling": {
			m: machine(deleting, hooked, timeout(60)), now: t0.Add(10 * time.Second), ok: true, requeue: drainPoll, letGo: "gives up at 2030-01-02T03:05:05Z",
		},
		"close to the deadline: comes back at it": {
			m: machine(deleting, hooked, timeout(60)), now: t0.Add(58 * time.Second), ok: true, requeue: 2 * time.Second, letGo: "gives up at",
		},
		"at the deadline: timed out": {
			m: machine(deleting, hooked, timeout(60)), now: t0.Add(60 * time.Second), ok: true, timedOut: true, requeue: time.Second, letGo: "gives up at",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, deadline, ok := drainDeadline(tt.m)
			if ok != tt.ok || (ok && !tt.now.Before(deadline)) != tt.timedOut {
				t.Errorf("drainDeadline = %v, %v; want ok=%v timedOut=%v", deadline, ok, tt.ok, tt.timedOut)
			}
			if got := waitRequeue(tt.m, tt.now); got != tt.requeue {
				t.Errorf("waitRequeue = %s, want %s", got, tt.requeue)
			}
			if got := letGo(tt.m); !strings.Contains(got, tt.letGo) {
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
