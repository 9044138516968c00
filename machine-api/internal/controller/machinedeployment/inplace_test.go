package machinedeployment

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
)

func TestDecideInPlace(t *testing.T) {
	spec := func(instanceType string) v1beta1.MachineSpec {
		return v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"instanceType":"` + instanceType + `"}`)}}}
	}
	md := func(policy v1beta1.InPlacePolicy, strategy v1beta1.MachineDeploymentStrategyType) *v1beta1.MachineDeployment {
		d := &v1beta1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		d.Spec.Template.Spec = spec("large")
		d.Spec.Strategy.Type = strategy
		if policy != "" {
			d.Spec.Rollout = &v1beta1.MachineDeploymentRollout{InPlace: policy}
		}
		return d
	}
	want := uptodate.TemplateHash(&md("", "").Spec.Template)
	set := func(name string, replicas int32) *v1beta1.MachineSet {
		s := &v1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Replicas = ptr.To(replicas)
		s.Spec.Template.Spec = spec("small")
		return s
	}
	machine := func(name string, rec *v1beta1.MachineInPlaceUpdate) *v1beta1.Machine {
		return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec("small"), Status: v1beta1.MachineStatus{InPlaceUpdate: rec}}
	}
	planned := func(paths ...string) *v1beta1.MachineInPlaceUpdate {
		return &v1beta1.MachineInPlaceUpdate{TemplateHash: want, Paths: paths, Disruption: v1beta1.InPlaceDisruptionDrain}
	}
	unsupported := &v1beta1.MachineInPlaceUpdate{TemplateHash: want, Unsupported: []string{"spec.versions.kubelet"}}
	stale := &v1beta1.MachineInPlaceUpdate{TemplateHash: "other"}
	there := machine("c", nil)
	there.Spec = spec("large")
	one := []*v1beta1.MachineSet{set("web-a", 2), set("web-old", 0)}

	tests := map[string]struct {
		md       *v1beta1.MachineDeployment
		sets     []*v1beta1.MachineSet
		machines []*v1beta1.Machine
		route    Route
		message  string // a substring of the message
	}{
		"Never replaces": {
			md: md("", ""), sets: one, machines: []*v1beta1.Machine{machine("a", planned("p"))}, route: RouteReplace,
		},
		"Prefer, every Machine planned: in place": {
			md: md(v1beta1.InPlacePrefer, ""), sets: one,
			machines: []*v1beta1.Machine{machine("a", planned("p")), machine("b", planned("q"))}, route: RouteInPlace,
		},
		"a Machine without a plan yet: wait": {
			md: md(v1beta1.InPlacePrefer, ""), sets: one,
			machines: []*v1beta1.Machine{machine("a", planned("p")), machine("b", nil)}, route: RouteWait, message: "(b)",
		},
		"a plan for another template counts as none": {
			md: md(v1beta1.InPlaceOnly, ""), sets: one, machines: []*v1beta1.Machine{machine("a", stale)}, route: RouteWait,
		},
		"a Machine that has the template already needs no plan": {
			md: md(v1beta1.InPlacePrefer, ""), sets: one, machines: []*v1beta1.Machine{machine("a", planned("p")), there}, route: RouteInPlace,
		},
		"a Machine being deleted is not waited for": {
			md: md(v1beta1.InPlacePrefer, ""), sets: one,
			machines: []*v1beta1.Machine{machine("a", planned("p")), func() *v1beta1.Machine {
				m := machine("b", nil)
				m.DeletionTimestamp = ptr.To(metav1.Now())
				return m
			}()}, route: RouteInPlace,
		},
		"Prefer with an unsupported field: replace": {
			md: md(v1beta1.InPlacePrefer, ""), sets: one, machines: []*v1beta1.Machine{machine("a", planned("p")), machine("b", unsupported)},
			route: RouteReplace, message: "spec.versions.kubelet",
		},
		"Only with an unsupported field: blocked, naming it and the Machines": {
			md: md(v1beta1.InPlaceOnly, ""), sets: one, machines: []*v1beta1.Machine{machine("a", planned("p")), machine("b", unsupported)},
			route: RouteBlocked, message: "cannot update spec.versions.kubelet in place, for 1 Machines (b)",
		},
		"Only with two sets holding Machines: blocked": {
			md: md(v1beta1.InPlaceOnly, ""), sets: []*v1beta1.MachineSet{set("web-a", 1), set("web-b", 1)}, route: RouteBlocked, message: "2 MachineSets hold Machines",
		},
		"Prefer with two sets holding Machines: replace": {
			md: md(v1beta1.InPlacePrefer, ""), sets: []*v1beta1.MachineSet{set("web-a", 1), set("web-b", 1)}, route: RouteReplace,
		},
		"no Machines: replace (a new set)": {
			md: md(v1beta1.InPlaceOnly, ""), sets: []*v1beta1.MachineSet{set("web-a", 0)}, route: RouteReplace,
		},
		"OnDelete replaces": {
			md: md(v1beta1.InPlaceOnly, v1beta1.OnDeleteStrategy), sets: one, machines: []*v1beta1.Machine{machine("a", planned("p"))}, route: RouteReplace,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := DecideInPlace(tc.md, tc.sets, tc.machines)
			if d.Route != tc.route {
				t.Fatalf("route %s (%s), want %s", d.Route, d.Message, tc.route)
			}
			if tc.message != "" && !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q, want it to say %q", d.Message, tc.message)
			}
			if d.Route == RouteInPlace && (d.Set == nil || d.Set.Name != "web-a" || !d.Disruptive) {
				t.Errorf("in place on %v (disruptive %t), want web-a, disruptive", d.Set, d.Disruptive)
			}
		})
	}
}

// TestRolloutIsNotCompleteWhileMachinesWaitForTheirUpdate: the set updated in place has all its
// Machines available between two reboots; the rollout is complete only once none waits.
func TestRolloutIsNotCompleteWhileMachinesWaitForTheirUpdate(t *testing.T) {
	set := &v1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "web-a"}}
	set.Spec.Replicas = ptr.To(int32(2))
	set.Status.Replicas, set.Status.AvailableReplicas = 2, 2
	md := &v1beta1.MachineDeployment{}
	md.Spec.Replicas = ptr.To(int32(2))
	s := &scope{md: md, newSet: set}
	if !complete(s) {
		t.Fatal("two available Machines of two, nothing pending: want complete")
	}
	s.inPlacePending = 1
	if complete(s) {
		t.Error("one Machine still to be updated in place: want not complete")
	}
}
