package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/sim"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// withSpec returns a copy of m whose providerSpec value is the given JSON.
func withSpec(m *v1beta1.Machine, spec string) *v1beta1.Machine {
	m = m.DeepCopy()
	m.Spec.ProviderSpec = v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(spec)}}
	return m
}

// instanceOf returns p's instance of m.
func instanceOf(t *testing.T, p *sim.Provider, m *v1beta1.Machine) sim.Instance {
	t.Helper()
	for _, inst := range p.Instances() {
		if inst.ID == m.UID {
			return inst
		}
	}
	t.Fatalf("no instance for machine %s", m.Name)
	return sim.Instance{}
}

// requeueAfter returns how long err asks to wait, failing the test when it is no RequeueAfter.
func requeueAfter(t *testing.T, err error) time.Duration {
	t.Helper()
	r, ok := provider.AsRequeueAfter(err)
	if !ok {
		t.Fatalf("UpdateInPlace = %v; want a RequeueAfter error while the instance reboots", err)
	}
	return r.After
}

// TestCanUpdateInPlace protects the plan: it compares the desired providerSpec with the instance
// (not with the Machine's spec), a type change is disruptive, a tag change is not, and a bad
// desired spec or a missing instance are errors.
func TestCanUpdateInPlace(t *testing.T) {
	const instance = `{"instanceType":"small","tags":{"team":"a"}}`
	tests := map[string]struct {
		instance string // the spec the instance was created with; "" creates none
		current  string // m's spec when asked; default instance
		desired  string
		want     provider.InPlacePlan
		invalid  bool
		fails    bool
	}{
		"a new instance type is disruptive": {
			instance: instance, desired: `{"instanceType":"medium","tags":{"team":"a"}}`,
			want: provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.instanceType"}, Disruptive: true},
		},
		"new tags are not disruptive": {
			instance: instance, desired: `{"instanceType":"small","tags":{"team":"b"}}`,
			want: provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.tags"}},
		},
		"dropping the tags is a tag change": {
			instance: instance, desired: `{"instanceType":"small"}`,
			want: provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.tags"}},
		},
		"a new type and new tags are both in the plan, which is disruptive": {
			instance: instance, desired: `{"instanceType":"large","tags":{}}`,
			want: provider.InPlacePlan{Paths: []string{"spec.providerSpec.value.instanceType", "spec.providerSpec.value.tags"}, Disruptive: true},
		},
		"the same spec spelled differently is an empty plan": {
			instance: `{"tags":{"team":"a"}}`, desired: instance,
			want: provider.InPlacePlan{},
		},
		"the instance counts, not the Machine's spec": {
			instance: instance, current: `{"instanceType":"large","tags":{"team":"z"}}`, desired: instance,
			want: provider.InPlacePlan{},
		},
		"an instance type the sim does not offer is an invalid configuration": {
			instance: instance, desired: `{"instanceType":"huge"}`, invalid: true,
		},
		"an unknown field is an invalid configuration": {
			instance: instance, desired: `{"size":"large"}`, invalid: true,
		},
		"tags that are not strings are an invalid configuration": {
			instance: instance, desired: `{"tags":{"team":1}}`, invalid: true,
		},
		"a Machine without an instance is an error": {
			desired: instance, fails: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p, err := sim.New(sim.Options{BootDelay: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			m := newMachine("m")
			if tc.instance != "" {
				m = withSpec(m, tc.instance)
				if err := p.Create(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if tc.current != "" {
				m = withSpec(m, tc.current)
			}
			plan, err := p.CanUpdateInPlace(ctx, m, withSpec(m, tc.desired))
			switch {
			case tc.invalid || tc.fails:
				if err == nil || provider.IsInvalidConfiguration(err) != tc.invalid {
					t.Fatalf("error %v; want an error, invalid configuration %v", err, tc.invalid)
				}
			case err != nil:
				t.Fatal(err)
			case !reflect.DeepEqual(plan, tc.want):
				t.Errorf("plan %+v, want %+v", plan, tc.want)
			}
		})
	}
}

// TestATypeChangeRebootsOnceAcrossCallsAndRestarts protects the idempotency of UpdateInPlace: one
// reboot of the default 3s however often it is called during it, also by a provider opened
// afterwards on the same state folder (a restarted manager); RequeueAfter until the reboot is
// over, nil afterwards, with the new type and its capacity recorded.
func TestATypeChangeRebootsOnceAcrossCallsAndRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := testclock.NewFakeClock(t0)
	open := func() *sim.Provider {
		p, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := open()
	m := withSpec(newMachine("resized"), `{"instanceType":"small"}`)
	if err := first.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m = withSpec(m, `{"instanceType":"medium"}`)

	if got := requeueAfter(t, first.UpdateInPlace(ctx, m)); got != 3*time.Second {
		t.Errorf("the reboot takes %s, want the default 3s", got)
	}
	clock.Step(time.Second)
	if got := requeueAfter(t, first.UpdateInPlace(ctx, m)); got != 2*time.Second {
		t.Errorf("1s into the reboot: requeue after %s, want 2s", got)
	}
	restarted := open()
	if got := requeueAfter(t, restarted.UpdateInPlace(ctx, m)); got != 2*time.Second {
		t.Errorf("after a restart, 1s into the reboot: requeue after %s, want 2s", got)
	}
	clock.Step(2 * time.Second)
	for range 2 {
		if err := restarted.UpdateInPlace(ctx, m); err != nil {
			t.Fatalf("after the reboot: %v, want nil", err)
		}
	}
	for name, p := range map[string]*sim.Provider{"first": first, "restarted": restarted} {
		inst := instanceOf(t, p, m)
		if inst.InPlaceUpdates != 1 || inst.InstanceType != "medium" || inst.Capacity.Cpu().String() != "4" {
			t.Errorf("%s provider: %d in-place updates, type %s, cpu %s; want 1, medium, 4", name, inst.InPlaceUpdates, inst.InstanceType, inst.Capacity.Cpu())
		}
	}
	if plan, err := restarted.CanUpdateInPlace(ctx, m, m); err != nil || len(plan.Paths) > 0 {
		t.Errorf("after the update the plan is %+v, %v; want empty", plan, err)
	}
}

// TestATagChangeNeedsNoReboot: new tags are recorded at once, survive a restart, and count no
// in-place update (no reboot).
func TestATagChangeNeedsNoReboot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	m := withSpec(newMachine("tagged"), `{"tags":{"team":"a"}}`)
	if err := p.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := instanceOf(t, p, m).Tags; !reflect.DeepEqual(got, map[string]string{"team": "a"}) {
		t.Errorf("Create recorded tags %v", got)
	}
	m = withSpec(m, `{"tags":{"team":"b","cost":"x"}}`)
	if err := p.UpdateInPlace(ctx, m); err != nil {
		t.Fatalf("UpdateInPlace = %v; want nil at once", err)
	}
	restarted, err := sim.New(sim.Options{StateDir: dir, BootDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	inst := instanceOf(t, restarted, m)
	if want := map[string]string{"team": "b", "cost": "x"}; !reflect.DeepEqual(inst.Tags, want) || inst.InPlaceUpdates != 0 || !inst.RebootUntil.IsZero() {
		t.Errorf("after the tag change: tags %v, %d in-place updates, reboot until %v; want %v, 0, none", inst.Tags, inst.InPlaceUpdates, inst.RebootUntil, want)
	}
}

// TestASecondTypeChangeWaitsForTheReboot: asking for another type while the instance reboots
// counts nothing; the second change starts once the first reboot is over.
func TestASecondTypeChangeWaitsForTheReboot(t *testing.T) {
	ctx := context.Background()
	clock := testclock.NewFakeClock(t0)
	p, err := sim.New(sim.Options{BootDelay: time.Hour, Clock: clock, RebootDuration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine("twice")
	if err := p.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	requeueAfter(t, p.UpdateInPlace(ctx, withSpec(m, `{"instanceType":"medium"}`)))
	clock.Step(4 * time.Second)
	large := withSpec(m, `{"instanceType":"large"}`)
	if got := requeueAfter(t, p.UpdateInPlace(ctx, large)); got != 6*time.Second {
		t.Errorf("during the first reboot: requeue after %s, want the 6s it has left", got)
	}
	if inst := instanceOf(t, p, m); inst.InPlaceUpdates != 1 || inst.InstanceType != "medium" {
		t.Fatalf("during the first reboot: %d updates, type %s; want 1, medium", inst.InPlaceUpdates, inst.InstanceType)
	}
	clock.Step(6 * time.Second)
	if got := requeueAfter(t, p.UpdateInPlace(ctx, large)); got != 10*time.Second {
		t.Errorf("the second reboot: requeue after %s, want 10s", got)
	}
	if inst := instanceOf(t, p, m); inst.InPlaceUpdates != 2 || inst.InstanceType != "large" {
		t.Errorf("after the second change: %d updates, type %s; want 2, large", inst.InPlaceUpdates, inst.InstanceType)
	}
}

// TestRebootDuration protects the reboot knobs: Options.RebootDuration (0 meaning 3s, negative
// none) and the per-Machine annotation, whose bad value is an invalid configuration.
func TestRebootDuration(t *testing.T) {
	tests := map[string]struct {
		option     time.Duration
		annotation *string
		want       time.Duration // 0: UpdateInPlace returns nil at once
		invalid    bool
	}{
		"the default is 3s":                            {want: 3 * time.Second},
		"the option sets it":                           {option: 10 * time.Second, want: 10 * time.Second},
		"a negative option means back at once":         {option: -1},
		"the annotation wins":                          {option: 10 * time.Second, annotation: ptr.To("1m"), want: time.Minute},
		"an annotation of 0s means back at once":       {annotation: ptr.To("0s")},
		"a bad annotation is an invalid configuration": {annotation: ptr.To("soon"), invalid: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			p, err := sim.New(sim.Options{BootDelay: time.Hour, RebootDuration: tc.option, Clock: testclock.NewFakeClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			m := newMachine("m")
			if err := p.Create(ctx, m); err != nil {
				t.Fatal(err)
			}
			m = withSpec(m, `{"instanceType":"large"}`)
			if tc.annotation != nil {
				m.Annotations = map[string]string{sim.RebootDurationAnnotation: *tc.annotation}
			}
			err = p.UpdateInPlace(ctx, m)
			switch {
			case tc.invalid:
				if !provider.IsInvalidConfiguration(err) {
					t.Fatalf("UpdateInPlace = %v; want an invalid configuration", err)
				}
				return
			case tc.want == 0 && err != nil:
				t.Fatalf("UpdateInPlace = %v; want nil at once", err)
			case tc.want != 0:
				if got := requeueAfter(t, err); got != tc.want {
					t.Errorf("requeue after %s, want %s", got, tc.want)
				}
			}
			if inst := instanceOf(t, p, m); inst.InPlaceUpdates != 1 || inst.InstanceType != "large" {
				t.Errorf("%d in-place updates, type %s; want 1, large", inst.InPlaceUpdates, inst.InstanceType)
			}
		})
	}
}

// TestAStateFileWithoutInPlaceFieldsIsRead: a state folder written before in-place updates
// existed is read: no tags, no updates, and the plan compares against it.
func TestAStateFileWithoutInPlaceFieldsIsRead(t *testing.T) {
	dir := t.TempDir()
	old := `{"id":"u-1","namespace":"default","machine":"old","providerID":"sim:///u-1","nodeName":"old-u1",
		"internalIP":"10.128.0.10","instanceType":"small","capacity":{"cpu":"2"},"kubeletVersion":"v1.37.2",
		"createdAt":"2026-01-01T00:00:00Z","bootAt":"2026-01-01T00:00:02Z","registered":true,"podsRemoved":0}`
	if err := os.WriteFile(filepath.Join(dir, "u-1.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := sim.New(sim.Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := withSpec(newMachine("old"), `{"tags":{"team":"a"}}`)
	m.UID = "u-1"
	inst := instanceOf(t, p, m)
	if inst.Tags != nil || inst.InPlaceUpdates != 0 || !inst.RebootUntil.IsZero() {
		t.Errorf("an old instance reads as tags %v, %d updates, reboot until %v; want none", inst.Tags, inst.InPlaceUpdates, inst.RebootUntil)
	}
	plan, err := p.CanUpdateInPlace(context.Background(), m, m)
	if err != nil || !reflect.DeepEqual(plan.Paths, []string{"spec.providerSpec.value.tags"}) || plan.Disruptive {
		t.Errorf("plan %+v, %v; want the tags, not disruptive", plan, err)
	}
}

// readyOf returns the Node's Ready condition.
func readyOf(node *corev1.Node) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// TestTheNodeRebootsToTheNewCapacity runs the simulated kubelet against a real API server: the
// Node of an instance changing type reports Ready=False while it reboots and comes back Ready
// with the new capacity (the type's, or the MachineClass nodeTemplate's), written by
// UpdateInPlace itself when no manager runs and by the kubelet controller on its own when one does.
func TestTheNodeRebootsToTheNewCapacity(t *testing.T) {
	cfg, c := startAPIServerWithConfig(t)

	t.Run("UpdateInPlace writes the Node, without a manager", func(t *testing.T) {
		tests := map[string]struct {
			class   *v1beta1.MachineClass
			wantCPU string
		}{
			"the new type's capacity": {wantCPU: "4"},
			"a MachineClass nodeTemplate's capacity wins": {
				class:   &v1beta1.MachineClass{Spec: v1beta1.MachineClassSpec{NodeTemplate: &v1beta1.NodeTemplate{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48")}}}},
				wantCPU: "48",
			},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				clock := testclock.NewFakeClock(t0)
				p, err := sim.New(sim.Options{Clock: clock, HeartbeatInterval: -1})
				if err != nil {
					t.Fatal(err)
				}
				p.WithClient(c)
				m := withSpec(newMachine("reboot"), `{"instanceType":"small"}`)
				if err := p.Create(provider.WithMachineClass(context.Background(), nil), m); err != nil {
					t.Fatal(err)
				}
				ctx := provider.WithMachineClass(context.Background(), tc.class)
				m = withSpec(m, `{"instanceType":"medium"}`)
				key := types.NamespacedName{Name: instanceOf(t, p, m).NodeName}

				requeueAfter(t, p.UpdateInPlace(ctx, m))
				node := &corev1.Node{}
				if err := c.Get(ctx, key, node); err != nil {
					t.Fatal(err)
				}
				if r := readyOf(node); r.Status != corev1.ConditionFalse || r.Reason != "KubeletNotReady" || !strings.Contains(r.Message, "rebooting") {
					t.Errorf("during the reboot the Node is Ready=%s (%s: %s); want False, KubeletNotReady, rebooting", r.Status, r.Reason, r.Message)
				}
				if got := node.Status.Capacity.Cpu().String(); got != "2" {
					t.Errorf("during the reboot the Node has %s CPUs, want the old type's 2", got)
				}

				clock.Step(3 * time.Second)
				if err := p.UpdateInPlace(ctx, m); err != nil {
					t.Fatalf("after the reboot: %v, want nil", err)
				}
				if err := c.Get(ctx, key, node); err != nil {
					t.Fatal(err)
				}
				if r := readyOf(node); r.Status != corev1.ConditionTrue || !r.LastTransitionTime.Time.Equal(t0.Add(3*time.Second)) {
					t.Errorf("after the reboot the Node is Ready=%s since %v; want True since the reboot's end", r.Status, r.LastTransitionTime)
				}
				if capCPU, allocCPU := node.Status.Capacity.Cpu().String(), node.Status.Allocatable.Cpu().String(); capCPU != tc.wantCPU || allocCPU != tc.wantCPU {
					t.Errorf("after the reboot the Node has capacity %s, allocatable %s CPUs; want %s", capCPU, allocCPU, tc.wantCPU)
				}
				if got := node.Labels[corev1.LabelInstanceTypeStable]; got != "medium" {
					t.Errorf("instance-type label %q, want medium", got)
				}
			})
		}
	})

	t.Run("the kubelet controller brings the Node back by itself", func(t *testing.T) {
		p, err := sim.New(sim.Options{HeartbeatInterval: -1, RebootDuration: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{
			Scheme:                 manager.Scheme(),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		g := gomega.NewWithT(t)
		m := withSpec(newMachine("by-itself"), `{"instanceType":"small"}`)
		if err := p.Create(provider.WithMachineClass(ctx, nil), m); err != nil {
			t.Fatal(err)
		}
		key := types.NamespacedName{Name: instanceOf(t, p, m).NodeName}
		// UpdateInPlace reads the Node through the manager's cache: let it see the Node first.
		g.Eventually(func() error { return mgr.GetClient().Get(ctx, key, &corev1.Node{}) }).Should(gomega.Succeed())

		requeueAfter(t, p.UpdateInPlace(provider.WithMachineClass(ctx, nil), withSpec(m, `{"instanceType":"large"}`)))
		node := &corev1.Node{}
		g.Expect(c.Get(ctx, key, node)).To(gomega.Succeed())
		g.Expect(readyOf(node).Status).To(gomega.Equal(corev1.ConditionFalse), "the Node is NotReady during the reboot")
		// Nothing calls UpdateInPlace again: only the kubelet controller can make it Ready.
		g.Eventually(func(g gomega.Gomega) {
			g.Expect(c.Get(ctx, key, node)).To(gomega.Succeed())
			g.Expect(readyOf(node).Status).To(gomega.Equal(corev1.ConditionTrue))
			g.Expect(node.Status.Capacity.Cpu().String()).To(gomega.Equal("16"))
			g.Expect(node.Status.Allocatable.Pods().String()).To(gomega.Equal("250"))
		}).WithTimeout(20 * time.Second).Should(gomega.Succeed())
	})
}
