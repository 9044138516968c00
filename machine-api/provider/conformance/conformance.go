package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// Suite describes the provider under test.
type Suite struct {
	// Provider is the provider under test.
	Provider provider.Provider
	// NewMachine returns a Machine with a valid configuration, the given name and a fresh UID.
	NewMachine func(name string) *v1beta1.Machine
	// InvalidMachine, if set, returns a Machine whose configuration the provider must reject as
	// invalid.
	InvalidMachine func(name string) *v1beta1.Machine
	// Instances, if set, counts the provider's instances, so the suite can check that a second
	// Create made none.
	Instances func() int
	// DeleteTimeout bounds how long Exists may stay true after Delete. Default 30s.
	DeleteTimeout time.Duration
}

// Run runs every check as a subtest of t.
func Run(t *testing.T, s Suite) {
	if s.DeleteTimeout == 0 {
		s.DeleteTimeout = 30 * time.Second
	}
	ctx := context.Background()

	create := func(t *testing.T, name string) *v1beta1.Machine {
		t.Helper()
		m := s.NewMachine(name)
		if err := s.Provider.Create(ctx, m); err != nil {
			t.Fatalf("Create(%s): %v", name, err)
		}
		t.Cleanup(func() { _ = s.Provider.Delete(ctx, m) })
		return m
	}

	t.Run("Create sets a providerID and an InternalIP", func(t *testing.T) {
		m := create(t, "sets-provider-id")
		if m.Spec.ProviderID == "" {
			t.Fatal("spec.providerID is empty after Create")
		}
		if internalIP(m) == "" {
			t.Errorf("status.addresses has no InternalIP after Create: %v", m.Status.Addresses)
		}
	})

	t.Run("Exists is true after Create", func(t *testing.T) {
		m := create(t, "exists-after-create")
		if ok, err := s.Provider.Exists(ctx, m); err != nil || !ok {
			t.Fatalf("Exists = %v, %v; want true, nil", ok, err)
		}
	})

	t.Run("Exists is false for a Machine never created", func(t *testing.T) {
		if ok, err := s.Provider.Exists(ctx, s.NewMachine("never-created")); err != nil || ok {
			t.Fatalf("Exists = %v, %v; want false, nil", ok, err)
		}
	})

	t.Run("Create is idempotent even when the providerID was lost", func(t *testing.T) {
		m := create(t, "idempotent")
		before := count(s)
		again := m.DeepCopy()
		again.Spec.ProviderID = "" // as if the controller crashed before persisting it
		again.Status = v1beta1.MachineStatus{}
		if err := s.Provider.Create(ctx, again); err != nil {
			t.Fatalf("second Create: %v", err)
		}
		if again.Spec.ProviderID != m.Spec.ProviderID {
			t.Errorf("second Create gave providerID %q, first gave %q: a second instance was made", again.Spec.ProviderID, m.Spec.ProviderID)
		}
		if s.Instances != nil && count(s) != before {
			t.Errorf("instances went from %d to %d on a repeated Create", before, count(s))
		}
	})

	t.Run("different Machines get different providerIDs", func(t *testing.T) {
		a, b := create(t, "distinct-a"), create(t, "distinct-b")
		if a.Spec.ProviderID == b.Spec.ProviderID {
			t.Fatalf("both Machines got providerID %q", a.Spec.ProviderID)
		}
	})

	t.Run("Update keeps the providerID", func(t *testing.T) {
		m := create(t, "update")
		id := m.Spec.ProviderID
		if err := s.Provider.Update(ctx, m); err != nil {
			t.Fatalf("Update: %v", err)
		}
		if m.Spec.ProviderID != id {
			t.Errorf("Update changed providerID from %q to %q", id, m.Spec.ProviderID)
		}
	})

	t.Run("Delete makes Exists false", func(t *testing.T) {
		m := create(t, "delete")
		if err := s.Provider.Delete(ctx, m); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, s.DeleteTimeout, true, func(ctx context.Context) (bool, error) {
			ok, err := s.Provider.Exists(ctx, m)
			if err != nil {
				return false, fmt.Errorf("exists after Delete: %w", err)
			}
			return !ok, nil
		})
		if err != nil {
			t.Fatalf("the instance still exists %s after Delete, or Exists failed: %v", s.DeleteTimeout, err)
		}
	})

	t.Run("deleting a missing instance succeeds", func(t *testing.T) {
		if err := s.Provider.Delete(ctx, s.NewMachine("never-existed")); err != nil {
			t.Fatalf("Delete of a missing instance: %v", err)
		}
	})

	t.Run("deleting twice succeeds", func(t *testing.T) {
		m := create(t, "delete-twice")
		for i := range 2 {
			if err := s.Provider.Delete(ctx, m); err != nil {
				t.Fatalf("Delete #%d: %v", i+1, err)
			}
		}
	})

	if l, ok := s.Provider.(provider.Lister); ok {
		runLister(t, s, l, create)
	}

	if s.InvalidMachine != nil {
		t.Run("an invalid configuration is reported as InvalidConfiguration", func(t *testing.T) {
			m := s.InvalidMachine("invalid")
			err := s.Provider.Create(ctx, m)
			if !provider.IsInvalidConfiguration(err) {
				t.Fatalf("Create of an invalid Machine returned %v; want a provider.InvalidConfiguration error", err)
			}
			if ok, _ := s.Provider.Exists(ctx, m); ok {
				t.Errorf("an instance exists for a Machine rejected as invalid")
			}
		})
	}
}

// runLister checks a provider's Lister: what List says of an instance, and DeleteInstance.
func runLister(t *testing.T, s Suite, l provider.Lister, create func(*testing.T, string) *v1beta1.Machine) {
	ctx := context.Background()
	find := func(t *testing.T, m *v1beta1.Machine) (provider.Instance, bool) {
		t.Helper()
		insts, err := l.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, i := range insts {
			if i.MachineUID == m.UID {
				return i, true
			}
		}
		return provider.Instance{}, false
	}

	t.Run("List reports an instance with its Machine's UID, namespace and name, and its providerID", func(t *testing.T) {
		m := create(t, "listed")
		inst, ok := find(t, m)
		if !ok {
			t.Fatalf("List has no instance with the Machine's UID %s", m.UID)
		}
		if inst.ProviderID != m.Spec.ProviderID || inst.MachineNamespace != m.Namespace || inst.MachineName != m.Name {
			t.Errorf("List says %+v; want providerID %q, Machine %s/%s", inst, m.Spec.ProviderID, m.Namespace, m.Name)
		}
		if inst.Created.IsZero() {
			t.Errorf("List gives no creation time for %s: the orphan collector would never collect it", inst.ProviderID)
		}
	})

	t.Run("DeleteInstance deletes an instance List reported, and deleting it again succeeds", func(t *testing.T) {
		m := create(t, "deleted-as-orphan")
		inst, ok := find(t, m)
		if !ok {
			t.Fatalf("List has no instance with the Machine's UID %s", m.UID)
		}
		for i := range 2 {
			if err := l.DeleteInstance(ctx, inst); err != nil {
				t.Fatalf("DeleteInstance #%d: %v", i+1, err)
			}
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, s.DeleteTimeout, true, func(ctx context.Context) (bool, error) {
			ok, err := s.Provider.Exists(ctx, m)
			return !ok, err
		})
		if err != nil {
			t.Fatalf("the instance still exists %s after DeleteInstance, or Exists failed: %v", s.DeleteTimeout, err)
		}
		if _, ok := find(t, m); ok {
			t.Errorf("List still reports the instance after DeleteInstance")
		}
	})
}

func count(s Suite) int {
	if s.Instances == nil {
		return 0
	}
	return s.Instances()
}

func internalIP(m *v1beta1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
