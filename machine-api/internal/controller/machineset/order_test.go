package machineset

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// machine is a healthy, linked, running Machine created minute minutes after t0.
func machine(name string, minute int, mutate ...func(*v1beta1.Machine)) *v1beta1.Machine {
	m := &v1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))},
		Status: v1beta1.MachineStatus{
			Phase:   v1beta1.MachinePhaseRunning,
			NodeRef: &v1beta1.NodeReference{Kind: "Node", Name: name},
			Conditions: []metav1.Condition{
				{Type: v1beta1.ReadyCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
				{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionTrue},
			},
		},
	}
	for _, f := range mutate {
		f(m)
	}
	return m
}

func deleting(m *v1beta1.Machine) { m.DeletionTimestamp = &metav1.Time{Time: t0} }
func annotated(m *v1beta1.Machine) {
	m.Annotations = map[string]string{v1beta1.DeleteMachineAnnotation: ""}
}
func failed(m *v1beta1.Machine) { m.Status.Phase = v1beta1.MachinePhaseFailed }
func noNode(m *v1beta1.Machine) { m.Status.NodeRef = nil }
func notLinked(m *v1beta1.Machine) {
	m.Status.Conditions = append(m.Status.Conditions[:1], metav1.Condition{Type: v1beta1.NodeLinkedCondition, Status: metav1.ConditionFalse})
}
func checkFailed(m *v1beta1.Machine) {
	m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, Status: metav1.ConditionFalse})
}

func namesOf(machines []*v1beta1.Machine) []string {
	out := make([]string, len(machines))
	for i, m := range machines {
		out[i] = m.Name
	}
	return out
}

func TestDeletionOrder(t *testing.T) {
	// By Random order (the UID hash): h-c < h-b < h-a, checked below, so the table can say it.
	cases := map[string]struct {
		machines []*v1beta1.Machine
		policy   v1beta1.DeletePolicy
		want     []string
	}{
		"classes come before the policy: deleting, annotated, unhealthy, healthy": {
			machines: []*v1beta1.Machine{
				machine("healthy-old", 0), machine("unhealthy-new", 9, failed), machine("annotated-new", 8, annotated),
				machine("deleting-new", 7, deleting),
			},
			policy: v1beta1.OldestDeletePolicy,
			want:   []string{"deleting-new", "annotated-new", "unhealthy-new", "healthy-old"},
		},
		"an annotated unhealthy Machine counts as annotated, a deleting annotated one as deleting": {
			machines: []*v1beta1.Machine{machine("a", 0, annotated, failed), machine("b", 1, deleting, annotated), machine("c", 2, failed)},
			policy:   v1beta1.NewestDeletePolicy,
			want:     []string{"b", "a", "c"},
		},
		"every kind of unhealthy is one class, ordered by the policy within it": {
			machines: []*v1beta1.Machine{
				machine("ok", 5), machine("failed", 1, failed), machine("no-node", 2, noNode),
				machine("not-linked", 3, notLinked), machine("check-failed", 4, checkFailed),
			},
			policy: v1beta1.NewestDeletePolicy,
			want:   []string{"check-failed", "not-linked", "no-node", "failed", "ok"},
		},
		"Newest: latest creation first": {
			machines: []*v1beta1.Machine{machine("a", 1), machine("b", 3), machine("c", 2)},
			policy:   v1beta1.NewestDeletePolicy,
			want:     []string{"b", "c", "a"},
		},
		"Oldest: earliest creation first": {
			machines: []*v1beta1.Machine{machine("a", 1), machine("b", 3), machine("c", 2)},
			policy:   v1beta1.OldestDeletePolicy,
			want:     []string{"a", "c", "b"},
		},
		"Random: by the hash of the UID, whatever the creation times": {
			machines: []*v1beta1.Machine{machine("h-a", 1), machine("h-b", 3), machine("h-c", 2)},
			policy:   v1beta1.RandomDeletePolicy,
			want:     []string{"h-c", "h-b", "h-a"},
		},
		"an unset policy is Random": {
			machines: []*v1beta1.Machine{machine("h-a", 1), machine("h-b", 3), machine("h-c", 2)},
			want:     []string{"h-c", "h-b", "h-a"},
		},
		"Newest ties (same second) break by name": {
			machines: []*v1beta1.Machine{machine("c", 1), machine("a", 1), machine("b", 1)},
			policy:   v1beta1.NewestDeletePolicy,
			want:     []string{"a", "b", "c"},
		},
		"Oldest ties break by name": {
			machines: []*v1beta1.Machine{machine("c", 1), machine("a", 1), machine("b", 0)},
			policy:   v1beta1.OldestDeletePolicy,
			want:     []string{"b", "a", "c"},
		},
		"Random ties (same UID hash) break by name": {
			machines: []*v1beta1.Machine{
				machine("z", 0, func(m *v1beta1.Machine) { m.UID = "same" }),
				machine("y", 0, func(m *v1beta1.Machine) { m.UID = "same" }),
			},
			policy: v1beta1.RandomDeletePolicy,
			want:   []string{"y", "z"},
		},
		"annotated ties break by the policy, then name": {
			machines: []*v1beta1.Machine{machine("b", 1, annotated), machine("a", 1, annotated), machine("c", 2, annotated)},
			policy:   v1beta1.OldestDeletePolicy,
			want:     []string{"a", "b", "c"},
		},
	}
	if !(uidHash(machine("h-c", 0)) < uidHash(machine("h-b", 0)) && uidHash(machine("h-b", 0)) < uidHash(machine("h-a", 0))) {
		t.Fatalf("the table assumes hash(h-c) < hash(h-b) < hash(h-a)")
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The order must not depend on the order the cache lists Machines in.
			for i := range 5 {
				in := slices.Clone(tc.machines)
				rand.New(rand.NewPCG(uint64(i), 7)).Shuffle(len(in), func(a, b int) { in[a], in[b] = in[b], in[a] })
				sortForDeletion(in, tc.policy)
				if got := namesOf(in); !slices.Equal(got, tc.want) {
					t.Fatalf("order %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestPickForDeletionTakesExactlyN(t *testing.T) {
	cases := map[string]struct {
		machines []*v1beta1.Machine
		n        int
		want     []string
	}{
		"scaling down by one deletes one even when three tie": {
			machines: []*v1beta1.Machine{machine("c", 1, annotated), machine("a", 1, annotated), machine("b", 1, annotated)},
			n:        1,
			want:     []string{"a"},
		},
		"more than there are deletes them all": {
			machines: []*v1beta1.Machine{machine("a", 1), machine("b", 2)},
			n:        5,
			want:     []string{"b", "a"},
		},
		"zero deletes none": {
			machines: []*v1beta1.Machine{machine("a", 1)},
			n:        0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := namesOf(pickForDeletion(tc.machines, tc.n, v1beta1.NewestDeletePolicy))
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("picked %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMarksTheCacheDoesNotShowYet: the cluster-autoscaler marks a Machine and lowers the
// replicas at once; a set whose cache shows the new replicas before the mark still deletes the
// marked Machine, because the marks are read from the API server when it shrinks.
func TestMarksTheCacheDoesNotShowYet(t *testing.T) {
	cached := []*v1beta1.Machine{machine("a", 0), machine("b", 1), machine("c", 2)}
	fresh := []v1beta1.Machine{*machine("a", 0), *machine("b", 1, annotated), *machine("c", 2)}
	got := pickForDeletion(withMarks(cached, fresh), 1, v1beta1.OldestDeletePolicy)
	if len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("deleted %v, want the Machine the API server shows marked (b)", namesOf(got))
	}
	if hasKey(cached[1].Annotations, v1beta1.DeleteMachineAnnotation) {
		t.Fatalf("the cached Machine was modified")
	}
	if got := pickForDeletion(cached, 1, v1beta1.OldestDeletePolicy); got[0].Name != "a" {
		t.Fatalf("without the fresh read the oldest (a) goes; got %v", namesOf(got))
	}

	// A mark only the cache shows stays; a Machine the read does not list keeps its cached state.
	cached = []*v1beta1.Machine{machine("a", 0), machine("b", 1), machine("c", 2, annotated)}
	if got := pickForDeletion(withMarks(cached, nil), 1, v1beta1.OldestDeletePolicy); got[0].Name != "c" {
		t.Fatalf("deleted %v, want the Machine marked in the cache (c)", namesOf(got))
	}
}
