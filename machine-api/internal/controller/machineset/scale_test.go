package machineset

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/reconciler"
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

// TestDeleteNowLooksAgainAtAMachineLinkedSinceTheCache protects the budget's exemption of Machines
// without a Node from a cache a moment behind: a victim the cache shows without a Node, linked to
// one since, is not deleted (its update event brings the set back, and the budget counts it then);
// a victim with a Node is deleted whatever changed, as is everything of a set being deleted.
func TestDeleteNowLooksAgainAtAMachineLinkedSinceTheCache(t *testing.T) {
	noNode := func(m *v1beta1.Machine) { m.Status.NodeRef = nil }
	linked := func(m *v1beta1.Machine) { m.Status.NodeRef = &v1beta1.NodeReference{Kind: "Node", Name: m.Name} }
	relabelled := func(m *v1beta1.Machine) { m.Labels = map[string]string{"changed": "since"} }
	tests := map[string]struct {
		cached     []func(*v1beta1.Machine) // the Machine as the cache shows it
		since      func(*v1beta1.Machine)   // what changed on the API server since (nil: nothing)
		setDeleted bool
		deleted    bool
	}{
		"no Node, unchanged: deleted":                     {cached: []func(*v1beta1.Machine){noNode}, deleted: true},
		"no Node in the cache, linked since: not deleted": {cached: []func(*v1beta1.Machine){noNode}, since: linked},
		"a Node, changed since: deleted":                  {since: relabelled, deleted: true},
		"no Node, linked since, of a set being deleted":   {cached: []func(*v1beta1.Machine){noNode}, since: linked, setDeleted: true, deleted: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scheme := runtime.NewScheme()
			if err := v1beta1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			stored := machine("m", 0, tc.cached...)
			stored.Namespace, stored.Finalizers = "ns", []string{v1beta1.MachineFinalizer}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).Build()
			cached := &v1beta1.Machine{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(stored), cached); err != nil {
				t.Fatal(err)
			}
			if tc.since != nil {
				now := cached.DeepCopy()
				tc.since(now)
				if err := c.Update(ctx, now); err != nil {
					t.Fatal(err)
				}
			}
			set := &v1beta1.MachineSet{}
			if tc.setDeleted {
				set.DeletionTimestamp = &metav1.Time{Time: t0}
			}
			s := &scope{set: set}
			r := &Reconciler{Deps: reconciler.Deps{Client: c}}
			if err := r.deleteNow(ctx, s, []*v1beta1.Machine{cached}, "", ""); err != nil {
				t.Fatalf("deleteNow: %v", err)
			}
			after := &v1beta1.Machine{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(stored), after); err != nil {
				t.Fatal(err)
			}
			if got := !after.DeletionTimestamp.IsZero(); got != tc.deleted {
				t.Errorf("Machine being deleted: %t, want %t", got, tc.deleted)
			}
			if got := len(s.deleted) == 1; got != tc.deleted {
				t.Errorf("the set records the deletion: %v, want %t", s.deleted, tc.deleted)
			}
		})
	}
}
