package nodelink

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// fakeLookup answers matching's questions from slices, as the indexes would.
type fakeLookup struct {
	nodes    []nodeView
	machines []machineView
	// gone are machines the API server no longer has (a Node's annotation may still name them).
	exists map[types.NamespacedName]bool
}

func (f fakeLookup) Node(name string) (*nodeView, error) {
	for _, n := range f.nodes {
		if n.Name == name {
			return &n, nil
		}
	}
	return nil, nil
}

func (f fakeLookup) NodesByProviderID(id string) ([]nodeView, error) {
	return filter(f.nodes, func(n nodeView) bool { return n.ProviderID == id }), nil
}

func (f fakeLookup) NodesByInternalIP(ip string) ([]nodeView, error) {
	return filter(f.nodes, func(n nodeView) bool { return contains(n.IPs, ip) }), nil
}

func (f fakeLookup) MachinesByProviderID(id string) ([]machineView, error) {
	return filter(f.machines, func(m machineView) bool { return m.ProviderID == id }), nil
}

func (f fakeLookup) MachinesByInternalIP(ip string) ([]machineView, error) {
	return filter(f.machines, func(m machineView) bool { return contains(m.IPs, ip) }), nil
}

func (f fakeLookup) MachinesByNodeName(name string) ([]machineView, error) {
	return filter(f.machines, func(m machineView) bool { return m.NodeRef != nil && m.NodeRef.Name == name }), nil
}

func (f fakeLookup) MachineExists(key types.NamespacedName) (bool, error) {
	if exists, ok := f.exists[key]; ok {
		return exists, nil
	}
	for _, m := range f.machines {
		if m.Key == key {
			return true, nil
		}
	}
	return false, nil
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, v := range in {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func machine(name string, created time.Time) machineView {
	return machineView{Key: types.NamespacedName{Namespace: "ns", Name: name}, Created: created}
}

func (m machineView) withProviderID(id string) machineView { m.ProviderID = id; return m }
func (m machineView) withIPs(ips ...string) machineView    { m.IPs = ips; return m }
func (m machineView) linkedTo(node string, uid types.UID) machineView {
	m.NodeRef = &NodeRef{Name: node, UID: uid}
	return m
}

func node(name string, created time.Time) nodeView {
	return nodeView{Name: name, UID: types.UID("uid-" + name), Created: created}
}

func (n nodeView) withProviderID(id string) nodeView { n.ProviderID = id; return n }
func (n nodeView) withIPs(ips ...string) nodeView    { n.IPs = ips; return n }
func (n nodeView) claimedBy(machine string) nodeView {
	n.ClaimedBy = types.NamespacedName{Namespace: "ns", Name: machine}
	return n
}

func TestDecide(t *testing.T) {
	later := t0.Add(time.Minute)
	earlier := t0.Add(-time.Minute)
	m1 := machine("m1", t0)
	tests := map[string]struct {
		machine  machineView
		world    fakeLookup
		wantNode string // "" when nothing is linked
		reason   string
		message  string // a substring the message must contain
		relinked bool
	}{
		"providerID matches one Node": {
			machine:  m1.withProviderID("sim:///a"),
			world:    fakeLookup{nodes: []nodeView{node("n1", earlier).withProviderID("sim:///a"), node("n2", later).withProviderID("sim:///b")}},
			wantNode: "n1", reason: ReasonLinked, message: "by providerID sim:///a",
		},
		"providerID matches an older Node: the age guard is for IPs only": {
			machine:  m1.withProviderID("sim:///a").withIPs("10.0.0.1"),
			world:    fakeLookup{nodes: []nodeView{node("n1", earlier).withProviderID("sim:///a").withIPs("10.0.0.1")}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"providerID set: IPs are not used": {
			machine: m1.withProviderID("sim:///a").withIPs("10.0.0.1"),
			world:   fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.1")}},
			reason:  ReasonWaitingForNode, message: "spec.providerID sim:///a",
		},
		"no Node yet": {
			machine: m1.withProviderID("sim:///a"),
			reason:  ReasonWaitingForNode,
		},
		"neither providerID nor IP": {
			machine: m1,
			world:   fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.1")}},
			reason:  ReasonWaitingForNode, message: "waiting for the machine's providerID or an InternalIP",
		},
		"two Nodes with the providerID": {
			machine: m1.withProviderID("sim:///a"),
			world:   fakeLookup{nodes: []nodeView{node("n2", later).withProviderID("sim:///a"), node("n1", later).withProviderID("sim:///a")}},
			reason:  ReasonMultipleNodesMatch, message: "Nodes n1, n2 all have",
		},
		"two unlinked machines with the providerID": {
			machine: m1.withProviderID("sim:///a"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withProviderID("sim:///a")},
				machines: []machineView{m1.withProviderID("sim:///a"), machine("m2", t0).withProviderID("sim:///a")},
			},
			reason: ReasonMultipleMachinesMatch, message: "machines ns/m2 also have",
		},
		"Node with the providerID linked to another machine": {
			machine: m1.withProviderID("sim:///a"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withProviderID("sim:///a")},
				machines: []machineView{machine("m2", t0).withProviderID("sim:///a").linkedTo("n1", "uid-n1")},
			},
			reason: ReasonNodeLinkedToOtherMachine, message: "linked to machine ns/m2",
		},
		"InternalIP matches a newer Node": {
			machine:  m1.withIPs("10.0.0.1"),
			world:    fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.2", "10.0.0.1")}},
			wantNode: "n1", reason: ReasonLinked, message: "by InternalIP 10.0.0.1",
		},
		"InternalIP matches a Node created in the same second": {
			machine:  m1.withIPs("10.0.0.1"),
			world:    fakeLookup{nodes: []nodeView{node("n1", t0).withIPs("10.0.0.1")}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"recycled IP: the Node is older than the machine": {
			machine: m1.withIPs("10.0.0.1"),
			world:   fakeLookup{nodes: []nodeView{node("old", earlier).withIPs("10.0.0.1")}},
			reason:  ReasonIPMatchRefused, message: "created (2026-01-01T11:59:00Z) before this machine",
		},
		"IP match refused: the Node's annotation names another live machine": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1").claimedBy("m2")},
				machines: []machineView{machine("m2", t0).withProviderID("sim:///other")},
			},
			reason: ReasonIPMatchRefused, message: "linked to machine ns/m2",
		},
		"IP match refused: another machine's nodeRef names the Node": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1")},
				machines: []machineView{machine("m2", t0).linkedTo("n1", "")},
			},
			reason: ReasonIPMatchRefused, message: "linked to machine ns/m2",
		},
		"annotation naming a deleted machine does not block": {
			machine:  m1.withIPs("10.0.0.1"),
			world:    fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.1").claimedBy("gone")}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"annotation naming the machine itself does not block": {
			machine:  m1.withIPs("10.0.0.1"),
			world:    fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.1").claimedBy("m1")}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"two machines with the same IP: conflict": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1")},
				machines: []machineView{m1.withIPs("10.0.0.1"), machine("m2", t0).withIPs("10.0.0.1")},
			},
			reason: ReasonMultipleMachinesMatch, message: "machines ns/m2 also match Node n1",
		},
		"a rival the age guard refuses is no rival": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1")},
				machines: []machineView{m1.withIPs("10.0.0.1"), machine("m2", later.Add(time.Minute)).withIPs("10.0.0.1")},
			},
			wantNode: "n1", reason: ReasonLinked,
		},
		"a machine whose providerID is the Node's wins over an IP match": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1").withProviderID("sim:///a")},
				machines: []machineView{m1.withIPs("10.0.0.1"), machine("m2", t0).withProviderID("sim:///a")},
			},
			reason: ReasonMultipleMachinesMatch, message: "ns/m2",
		},
		"an IP-only machine does not block a providerID match": {
			machine: m1.withProviderID("sim:///a"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1").withProviderID("sim:///a")},
				machines: []machineView{m1.withProviderID("sim:///a"), machine("m2", t0).withIPs("10.0.0.1")},
			},
			wantNode: "n1", reason: ReasonLinked,
		},
		"linked rival machines do not count": {
			machine: m1.withIPs("10.0.0.1"),
			world: fakeLookup{
				nodes:    []nodeView{node("n1", later).withIPs("10.0.0.1"), node("n2", later).withIPs("10.0.0.9")},
				machines: []machineView{m1.withIPs("10.0.0.1"), machine("m2", t0).withIPs("10.0.0.1").linkedTo("n2", "uid-n2")},
			},
			wantNode: "n1", reason: ReasonLinked,
		},
		"two Nodes with the machine's IPs": {
			machine: m1.withIPs("10.0.0.1", "10.0.0.2"),
			world:   fakeLookup{nodes: []nodeView{node("n1", later).withIPs("10.0.0.1"), node("n2", later).withIPs("10.0.0.2")}},
			reason:  ReasonMultipleNodesMatch, message: "Nodes n1, n2",
		},
		"linked machine keeps its Node even when another matches better": {
			machine: m1.withProviderID("sim:///b").linkedTo("n1", "uid-n1"),
			world: fakeLookup{nodes: []nodeView{
				node("n1", later).withProviderID("sim:///a"), node("n2", later).withProviderID("sim:///b"),
			}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"linked machine without UID in its nodeRef": {
			machine:  m1.linkedTo("n1", ""),
			world:    fakeLookup{nodes: []nodeView{node("n1", later)}},
			wantNode: "n1", reason: ReasonLinked,
		},
		"linked Node deleted": {
			machine: m1.withIPs("10.0.0.1").linkedTo("n1", "uid-n1"),
			world:   fakeLookup{nodes: []nodeView{node("n9", later).withIPs("10.0.0.1")}},
			reason:  ReasonNodeDeleted, message: "Node n1 (uid uid-n1) in status.nodeRef was deleted",
		},
		"linked Node replaced by one with the same name: deleted": {
			machine: m1.linkedTo("n1", "uid-old"),
			world:   fakeLookup{nodes: []nodeView{node("n1", later)}},
			reason:  ReasonNodeDeleted,
		},
		"linked Node deleted, then re-registered with the machine's providerID": {
			machine:  m1.withProviderID("sim:///a").linkedTo("n1", "uid-old"),
			world:    fakeLookup{nodes: []nodeView{node("n1", later).withProviderID("sim:///a")}},
			wantNode: "n1", reason: ReasonLinked, relinked: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, err := decide(tc.machine, tc.world)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if d.Node != nil {
				got = d.Node.Name
			}
			if got != tc.wantNode || d.Reason != tc.reason || d.Relinked != tc.relinked {
				t.Errorf("decide() = node %q reason %s relinked %v (%s), want node %q reason %s relinked %v",
					got, d.Reason, d.Relinked, d.Message, tc.wantNode, tc.reason, tc.relinked)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q does not contain %q", d.Message, tc.message)
			}
		})
	}
}

// TestDecideIsSymmetric protects "never flap": two unlinked machines that match the same Node both
// see the conflict, whichever is reconciled first.
func TestDecideIsSymmetric(t *testing.T) {
	a := machine("a", t0).withIPs("10.0.0.1")
	b := machine("b", t0).withIPs("10.0.0.1")
	world := fakeLookup{nodes: []nodeView{node("n1", t0.Add(time.Second)).withIPs("10.0.0.1")}, machines: []machineView{a, b}}
	for _, m := range []machineView{a, b, a} {
		d, err := decide(m, world)
		if err != nil {
			t.Fatal(err)
		}
		if d.Node != nil || d.Reason != ReasonMultipleMachinesMatch {
			t.Errorf("machine %s: got node %v reason %s, want no link and %s", m.Key, d.Node, d.Reason, ReasonMultipleMachinesMatch)
		}
	}
}

// TestLinkedMessageIsStable protects "no write when nothing changed": the message of a first link
// and of every later reconcile of the linked pair are the same.
func TestLinkedMessageIsStable(t *testing.T) {
	n := node("n1", t0).withProviderID("sim:///a")
	m := machine("m1", t0).withProviderID("sim:///a")
	first, _ := decide(m, fakeLookup{nodes: []nodeView{n}})
	again, _ := decide(m.linkedTo("n1", n.UID), fakeLookup{nodes: []nodeView{n}})
	if first.Message != again.Message {
		t.Errorf("first link says %q, later reconciles say %q", first.Message, again.Message)
	}
}
