package uptodate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestChecked(t *testing.T) {
	set := types.NamespacedName{Namespace: "ns", Name: "web"}
	other := types.NamespacedName{Namespace: "ns", Name: "db"}
	machine := func(uid, rv string) *v1beta1.Machine {
		return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), ResourceVersion: rv}}
	}
	// pass runs one pass of owner under key over machines; found are the Machines the check finds
	// in line. It returns the Machines the pass had to check (InLine false).
	pass := func(c *Checked, owner types.NamespacedName, key string, machines []*v1beta1.Machine, found map[string]bool) []string {
		p := c.Pass(owner, key)
		var checked []string
		for _, m := range machines {
			if p.InLine(m) {
				continue
			}
			checked = append(checked, m.Name)
			if found[m.Name] {
				p.Found(m)
			}
		}
		p.Done()
		return checked
	}
	a1, b1, c1 := machine("a", "1"), machine("b", "1"), machine("c", "1")
	all := map[string]bool{"a": true, "b": true, "c": true}

	tests := []struct {
		name string
		// setup runs first passes; then second is checked.
		setup       func(c *Checked)
		owner       types.NamespacedName
		key         string
		machines    []*v1beta1.Machine
		wantChecked []string
	}{{
		name:  "first pass checks every Machine",
		setup: func(*Checked) {},
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a", "b"},
	}, {
		name:  "unchanged Machines found in line are not checked again",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all) },
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1, c1},
		wantChecked: []string{"c"},
	}, {
		name:  "a Machine at a new resourceVersion is checked again",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all) },
		owner: set, key: "g1", machines: []*v1beta1.Machine{machine("a", "2"), b1},
		wantChecked: []string{"a"},
	}, {
		name:  "a Machine that needed work is checked again though unchanged",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, map[string]bool{"b": true}) },
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a"},
	}, {
		name:  "another key (the template changed) checks every Machine",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all) },
		owner: set, key: "g2", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a", "b"},
	}, {
		name: "the pass after a key change does not find what the pass before it found",
		setup: func(c *Checked) {
			pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all)
			pass(c, set, "g2", []*v1beta1.Machine{a1, b1}, map[string]bool{"a": true})
		},
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a", "b"},
	}, {
		name: "a Machine a pass did not see is forgotten (gone, or back at the same version)",
		setup: func(c *Checked) {
			pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all)
			pass(c, set, "g1", []*v1beta1.Machine{a1}, all)
		},
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"b"},
	}, {
		name:  "owners are apart",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all) },
		owner: other, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a", "b"},
	}, {
		name: "a forgotten owner starts over",
		setup: func(c *Checked) {
			pass(c, set, "g1", []*v1beta1.Machine{a1, b1}, all)
			c.Forget(set)
		},
		owner: set, key: "g1", machines: []*v1beta1.Machine{a1, b1},
		wantChecked: []string{"a", "b"},
	}, {
		name:  "a Machine without a resourceVersion (not read from the API) is always checked",
		setup: func(c *Checked) { pass(c, set, "g1", []*v1beta1.Machine{machine("a", "")}, all) },
		owner: set, key: "g1", machines: []*v1beta1.Machine{machine("a", "")},
		wantChecked: []string{"a"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Checked{}
			tc.setup(c)
			got := pass(c, tc.owner, tc.key, tc.machines, all)
			if len(got) != len(tc.wantChecked) {
				t.Fatalf("checked %v, want %v", got, tc.wantChecked)
			}
			for i := range got {
				if got[i] != tc.wantChecked[i] {
					t.Fatalf("checked %v, want %v", got, tc.wantChecked)
				}
			}
		})
	}
}
