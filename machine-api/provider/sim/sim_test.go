package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/test/builder"
	"machineapi.dev/machine-api/internal/test/envtest"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/conformance"
	"machineapi.dev/machine-api/provider/sim"
)

func startAPIServer(t *testing.T) client.Client {
	t.Helper()
	_, c := startAPIServerWithConfig(t)
	return c
}

// startAPIServerWithConfig starts an API server and returns its config (for a manager) and a
// client straight to it.
func startAPIServerWithConfig(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(env.Config, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return env.Config, c
}

func newMachine(name string) *v1beta1.Machine {
	m := builder.Machine("default", name).Build()
	m.UID = uuid.NewUUID()
	return m
}

// TestConformance runs the provider conformance suite against the simulated provider, with its
// instances kept on disk and Nodes registered in a real API server.
func TestConformance(t *testing.T) {
	c := startAPIServer(t)
	p, err := sim.New(sim.Options{StateDir: t.TempDir(), HeartbeatInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.WithClient(c)
	conformance.Run(t, conformance.Suite{
		Provider:   p,
		NewMachine: newMachine,
		InvalidMachine: func(name string) *v1beta1.Machine {
			m := newMachine(name)
			m.Spec.ProviderSpec = builder.Machine("default", name).WithInstanceType("huge").Build().Spec.ProviderSpec
			return m
		},
		Instances: func() int { return len(p.Instances()) },
	})
}

// TestInstancesSurviveARestart checks that a provider reading the same state folder finds the
// instances an earlier one created, so a restarted manager never creates a second instance.
func TestInstancesSurviveARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("survivor")
	if err := first.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	second, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	again := m.DeepCopy()
	again.Spec.ProviderID = ""
	if ok, err := second.Exists(ctx, again); err != nil || !ok {
		t.Fatalf("Exists after restart = %v, %v; want true", ok, err)
	}
	if err := second.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again.Spec.ProviderID != m.Spec.ProviderID || second.CreatedInstances() != 0 {
		t.Fatalf("after a restart Create made a new instance (%s vs %s, %d created)", again.Spec.ProviderID, m.Spec.ProviderID, second.CreatedInstances())
	}
	other, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n := newMachine("newcomer")
	if err := other.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	if ip(n) == ip(m) {
		t.Fatalf("a restarted provider reused InternalIP %s", ip(m))
	}
}

// TestAStandbySeesTheLeadersInstances: two managers share a state folder (leader and standby,
// both started before any instance existed); what the leader creates and deletes afterwards is
// what the standby finds once it takes over, with no instance created twice and no InternalIP
// handed out to two live instances.
func TestAStandbySeesTheLeadersInstances(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	leader, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	standby, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	kept, gone := newMachine("kept"), newMachine("gone")
	for _, m := range []*v1beta1.Machine{kept, gone} {
		if err := leader.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}

	if ok, err := standby.Exists(ctx, kept); err != nil || !ok {
		t.Fatalf("standby: Exists(kept) = %v, %v; want true", ok, err)
	}
	if ok, err := standby.Exists(ctx, gone); err != nil || ok {
		t.Fatalf("standby: Exists(gone) = %v, %v; want false", ok, err)
	}
	if got := standby.Instances(); len(got) != 1 || got[0].ID != kept.UID {
		t.Fatalf("standby lists %d instances, want only %s", len(got), kept.Name)
	}
	again := kept.DeepCopy()
	again.Spec.ProviderID = ""
	if err := standby.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if standby.CreatedInstances() != 0 || again.Spec.ProviderID != kept.Spec.ProviderID {
		t.Fatalf("standby created a second instance for %s", kept.Name)
	}
	fresh := newMachine("fresh")
	if err := standby.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if ip(fresh) == ip(kept) {
		t.Fatalf("standby handed out the InternalIP %s of a live instance again", ip(fresh))
	}
}

func ip(m *v1beta1.Machine) string {
	for _, a := range m.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func TestKnobs(t *testing.T) {
	ctx := context.Background()
	tests := map[string]struct {
		annotations map[string]string
		instance    string
		invalid     bool
		check       func(t *testing.T, p *sim.Provider, m *v1beta1.Machine)
	}{
		"fail-create makes an invalid configuration with the annotation's message": {
			annotations: map[string]string{sim.FailCreateAnnotation: "image not found"},
			invalid:     true,
		},
		"an unknown instance type is an invalid configuration": {
			instance: "gigantic",
			invalid:  true,
		},
		"a bad boot delay is an invalid configuration": {
			annotations: map[string]string{sim.BootDelayAnnotation: "soon"},
			invalid:     true,
		},
		"internal-ip fixes the address": {
			annotations: map[string]string{sim.InternalIPAnnotation: "10.9.9.9"},
			check: func(t *testing.T, _ *sim.Provider, m *v1beta1.Machine) {
				if ip(m) != "10.9.9.9" {
					t.Errorf("InternalIP = %s, want 10.9.9.9", ip(m))
				}
			},
		},
		"vanish makes the instance disappear on the next Exists": {
			check: func(t *testing.T, p *sim.Provider, m *v1beta1.Machine) {
				m.Annotations = map[string]string{sim.VanishAnnotation: ""}
				if ok, _ := p.Exists(ctx, m); ok {
					t.Errorf("the instance still exists")
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := sim.New(sim.Options{BootDelay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			b := builder.Machine("default", "m").WithAnnotations(tc.annotations)
			if tc.instance != "" {
				b = b.WithInstanceType(tc.instance)
			}
			m := b.Build()
			m.UID = uuid.NewUUID()
			err = p.Create(ctx, m)
			if got := provider.IsInvalidConfiguration(err); got != tc.invalid {
				t.Fatalf("Create error %v; invalid configuration = %v, want %v", err, got, tc.invalid)
			}
			if tc.check != nil {
				tc.check(t, p, m)
			}
		})
	}
}

// TestNodeRegistersReadyWithTheClassCapacity checks the Node a booted instance registers.
func TestNodeRegistersReadyWithTheClassCapacity(t *testing.T) {
	c := startAPIServer(t)
	p, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.WithClient(c)
	m := newMachine("large-one")
	m.Spec.ProviderSpec = builder.Machine("default", "x").WithInstanceType("large").Build().Spec.ProviderSpec
	m.Spec.Versions = &v1beta1.MachineVersions{Kubelet: "v1.37.1"}
	ctx := provider.WithMachineClass(context.Background(), nil)
	if err := p.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	name := p.Instances()[0].NodeName
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, node); err != nil {
		t.Fatalf("the Node was not registered: %v", err)
	}
	if node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("Node providerID %s, Machine %s", node.Spec.ProviderID, m.Spec.ProviderID)
	}
	if node.Status.Capacity.Cpu().String() != "16" || node.Status.NodeInfo.KubeletVersion != "v1.37.1" {
		t.Errorf("Node capacity cpu %s kubelet %s; want 16 and v1.37.1", node.Status.Capacity.Cpu(), node.Status.NodeInfo.KubeletVersion)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Errorf("the Node registered without Ready=True: %+v", node.Status.Conditions)
	}
}

// TestALongNamedMachineGetsItsNode: a Machine name may hold 253 characters, a hostname (and the
// kubernetes.io/hostname label a kubelet sets from it) 63; the Node still registers.
func TestALongNamedMachineGetsItsNode(t *testing.T) {
	c := startAPIServer(t)
	p, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.WithClient(c)
	m := newMachine(strings.Repeat("n", 253))
	if err := p.Create(provider.WithMachineClass(context.Background(), nil), m); err != nil {
		t.Fatal(err)
	}
	name := p.Instances()[0].NodeName
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, &corev1.Node{}); err != nil {
		t.Fatalf("the Node %q (%d characters) was not registered: %v", name, len(name), err)
	}
}

// TestDeletingAnUnlinkedInstanceRemovesItsNode: an instance deleted after its Node registered but
// before the Machine was linked to it takes its Node along (nobody else would delete it); a
// linked Machine's Node is left to the machine controller.
func TestDeletingAnUnlinkedInstanceRemovesItsNode(t *testing.T) {
	c := startAPIServer(t)
	p, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.WithClient(c)
	ctx := provider.WithMachineClass(context.Background(), nil)
	unlinked, linked := newMachine("unlinked"), newMachine("linked")
	nodes := map[*v1beta1.Machine]string{}
	for _, m := range []*v1beta1.Machine{unlinked, linked} {
		if err := p.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		for _, inst := range p.Instances() {
			if inst.ID == m.UID {
				nodes[m] = inst.NodeName
			}
		}
	}
	linked.Status.NodeRef = &v1beta1.NodeReference{Kind: "Node", Name: nodes[linked]}
	for _, m := range []*v1beta1.Machine{unlinked, linked} {
		if err := p.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Name: nodes[unlinked]}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node of the unlinked Machine's deleted instance: %v, want it gone", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: nodes[linked]}, &corev1.Node{}); err != nil {
		t.Errorf("the Node of the linked Machine: %v, want it left to the machine controller", err)
	}
}
