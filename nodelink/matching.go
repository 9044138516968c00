package nodelink

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// machineView is what matching needs to know about a machine.
type machineView struct {
	Key        types.NamespacedName
	ProviderID string
	IPs        []string // InternalIPs, normalized
	Created    time.Time
	NodeRef    *NodeRef
}

// nodeView is what matching needs to know about a Node.
type nodeView struct {
	Name       string
	UID        types.UID
	ProviderID string
	IPs        []string // InternalIPs, normalized
	Created    time.Time
	// ClaimedBy is the machine named by the Node's <prefix>/machine and
	// <prefix>/cluster-namespace annotations; zero when the Node names none.
	ClaimedBy types.NamespacedName
}

// lookup answers matching's questions from field indexes. Every method costs an index lookup,
// independent of how many machines and Nodes exist.
type lookup interface {
	// Node returns the Node with this name, nil when there is none.
	Node(name string) (*nodeView, error)
	NodesByProviderID(providerID string) ([]nodeView, error)
	NodesByInternalIP(ip string) ([]nodeView, error)
	MachinesByProviderID(providerID string) ([]machineView, error)
	MachinesByInternalIP(ip string) ([]machineView, error)
	// MachinesByNodeName returns the machines whose status.nodeRef names this Node.
	MachinesByNodeName(name string) ([]machineView, error)
	// MachineExists reports whether the machine exists in the API (not only in a cache).
	MachineExists(key types.NamespacedName) (bool, error)
}

// decision is what matching concluded for one machine.
type decision struct {
	// Node is the Node the machine is (or gets) linked to; nil when it is not linked.
	Node *nodeView
	// Reason is the NodeLinked condition's reason, Message its message.
	Reason  string
	Message string
	// Relinked is true when a linked machine whose Node was deleted is linked to a new Node with
	// its providerID.
	Relinked bool
}

// decide finds the Node of machine m. A linked machine keeps its Node; an unlinked one is matched
// by providerID or, without one, by InternalIP, with the conflict and IP-reuse rules of doc.go.
func decide(m machineView, l lookup) (decision, error) {
	if m.NodeRef != nil {
		return decideLinked(m, l)
	}
	if m.ProviderID != "" {
		return matchByProviderID(m, l)
	}
	return matchByInternalIP(m, l)
}

// decideLinked keeps a linked machine on its Node, or reports that Node deleted. Only a Node with
// the machine's own providerID may replace a deleted one.
func decideLinked(m machineView, l lookup) (decision, error) {
	ref := *m.NodeRef
	n, err := l.Node(ref.Name)
	if err != nil {
		return decision{}, err
	}
	if n != nil && (ref.UID == "" || n.UID == ref.UID) {
		return linked(m, *n), nil
	}
	if m.ProviderID != "" {
		d, err := matchByProviderID(m, l)
		if err != nil {
			return decision{}, err
		}
		if d.Node != nil {
			d.Relinked = true
			return d, nil
		}
	}
	return decision{Reason: ReasonNodeDeleted, Message: fmt.Sprintf(
		"Node %s (uid %s) in status.nodeRef was deleted; status.nodeRef is kept until the machine is replaced or a Node with its providerID registers",
		ref.Name, ref.UID)}, nil
}

func matchByProviderID(m machineView, l lookup) (decision, error) {
	nodes, err := l.NodesByProviderID(m.ProviderID)
	if err != nil {
		return decision{}, err
	}
	switch len(nodes) {
	case 0:
		return decision{Reason: ReasonWaitingForNode, Message: fmt.Sprintf("waiting for a Node with spec.providerID %s", m.ProviderID)}, nil
	case 1:
	default:
		return decision{Reason: ReasonMultipleNodesMatch, Message: fmt.Sprintf(
			"Nodes %s all have spec.providerID %s: nothing is linked until only one does", nodeNames(nodes), m.ProviderID)}, nil
	}
	n := nodes[0]
	owner, err := linkedElsewhere(m, n, l)
	if err != nil {
		return decision{}, err
	}
	if owner != "" {
		return decision{Reason: ReasonNodeLinkedToOtherMachine, Message: fmt.Sprintf(
			"Node %s, which has this machine's providerID %s, is linked to machine %s", n.Name, m.ProviderID, owner)}, nil
	}
	others, err := l.MachinesByProviderID(m.ProviderID)
	if err != nil {
		return decision{}, err
	}
	if rivals := rivalsFor(m, n, others); len(rivals) > 0 {
		return decision{Reason: ReasonMultipleMachinesMatch, Message: fmt.Sprintf(
			"machines %s also have spec.providerID %s: Node %s is linked to none of them until only one does",
			strings.Join(rivals, ", "), m.ProviderID, n.Name)}, nil
	}
	return linked(m, n), nil
}

func matchByInternalIP(m machineView, l lookup) (decision, error) {
	if len(m.IPs) == 0 {
		return decision{Reason: ReasonWaitingForNode, Message: "waiting for the machine's providerID or an InternalIP address to match a Node by"}, nil
	}
	var nodes []nodeView
	for _, ip := range m.IPs {
		found, err := l.NodesByInternalIP(ip)
		if err != nil {
			return decision{}, err
		}
		for _, n := range found {
			if !slices.ContainsFunc(nodes, func(o nodeView) bool { return o.Name == n.Name }) {
				nodes = append(nodes, n)
			}
		}
	}
	ips := strings.Join(m.IPs, ", ")
	switch len(nodes) {
	case 0:
		return decision{Reason: ReasonWaitingForNode, Message: fmt.Sprintf("waiting for a Node with InternalIP %s (the machine has no providerID yet)", ips)}, nil
	case 1:
	default:
		return decision{Reason: ReasonMultipleNodesMatch, Message: fmt.Sprintf(
			"Nodes %s all share an InternalIP with this machine (%s): nothing is linked until only one does; set spec.providerID to disambiguate", nodeNames(nodes), ips)}, nil
	}
	n := nodes[0]
	if n.Created.Before(m.Created) {
		return decision{Reason: ReasonIPMatchRefused, Message: fmt.Sprintf(
			"Node %s has InternalIP %s but was created (%s) before this machine (%s): the IP was probably recycled; set spec.providerID or delete the stale Node",
			n.Name, sharedIP(m.IPs, n.IPs), n.Created.UTC().Format(time.RFC3339), m.Created.UTC().Format(time.RFC3339))}, nil
	}
	owner, err := linkedElsewhere(m, n, l)
	if err != nil {
		return decision{}, err
	}
	if owner != "" {
		return decision{Reason: ReasonIPMatchRefused, Message: fmt.Sprintf(
			"Node %s has InternalIP %s but is linked to machine %s", n.Name, sharedIP(m.IPs, n.IPs), owner)}, nil
	}
	var others []machineView
	if n.ProviderID != "" {
		byID, err := l.MachinesByProviderID(n.ProviderID)
		if err != nil {
			return decision{}, err
		}
		others = append(others, byID...)
	}
	for _, ip := range n.IPs {
		byIP, err := l.MachinesByInternalIP(ip)
		if err != nil {
			return decision{}, err
		}
		others = append(others, byIP...)
	}
	if rivals := rivalsFor(m, n, others); len(rivals) > 0 {
		return decision{Reason: ReasonMultipleMachinesMatch, Message: fmt.Sprintf(
			"machines %s also match Node %s (InternalIP %s): nothing is linked until only one does; set spec.providerID to disambiguate",
			strings.Join(rivals, ", "), n.Name, sharedIP(m.IPs, n.IPs))}, nil
	}
	return linked(m, n), nil
}

// linked is the decision to link m to n. Its message depends only on the pair, so that a linked
// machine's condition does not change from one reconcile to the next.
func linked(m machineView, n nodeView) decision {
	msg := fmt.Sprintf("linked to Node %s", n.Name)
	switch {
	case m.ProviderID != "" && m.ProviderID == n.ProviderID:
		msg += " by providerID " + m.ProviderID
	case sharedIP(m.IPs, n.IPs) != "":
		msg += " by InternalIP " + sharedIP(m.IPs, n.IPs)
	}
	return decision{Node: &n, Reason: ReasonLinked, Message: msg}
}

// linkedElsewhere returns the machine other than m that Node n is linked to — through another
// machine's status.nodeRef, or the Node's annotation naming another machine that still exists —
// and "" when there is none.
func linkedElsewhere(m machineView, n nodeView, l lookup) (string, error) {
	linked, err := l.MachinesByNodeName(n.Name)
	if err != nil {
		return "", err
	}
	var owners []string
	for _, o := range linked {
		if o.Key != m.Key && o.NodeRef != nil && (o.NodeRef.UID == "" || o.NodeRef.UID == n.UID) {
			owners = append(owners, o.Key.String())
		}
	}
	if len(owners) > 0 {
		slices.Sort(owners)
		return strings.Join(owners, ", "), nil
	}
	if n.ClaimedBy.Name == "" || n.ClaimedBy == m.Key {
		return "", nil
	}
	exists, err := l.MachineExists(n.ClaimedBy)
	if err != nil || !exists {
		return "", err
	}
	return n.ClaimedBy.String(), nil
}

// rivalsFor returns the sorted keys of the unlinked machines other than m that would be linked
// to Node n by the same rules.
func rivalsFor(m machineView, n nodeView, others []machineView) []string {
	var rivals []string
	for _, o := range others {
		if o.Key == m.Key || o.NodeRef != nil || !wouldMatch(o, n) {
			continue
		}
		if k := o.Key.String(); !slices.Contains(rivals, k) {
			rivals = append(rivals, k)
		}
	}
	slices.Sort(rivals)
	return rivals
}

// wouldMatch reports whether unlinked machine o matches Node n: by providerID when o has one,
// otherwise by an InternalIP that passes the age guard.
func wouldMatch(o machineView, n nodeView) bool {
	if o.ProviderID != "" {
		return o.ProviderID == n.ProviderID
	}
	return sharedIP(o.IPs, n.IPs) != "" && !n.Created.Before(o.Created)
}

// sharedIP returns the first of ips that is also in nodeIPs, "" when none is.
func sharedIP(ips, nodeIPs []string) string {
	for _, ip := range ips {
		if slices.Contains(nodeIPs, ip) {
			return ip
		}
	}
	return ""
}

func nodeNames(nodes []nodeView) string {
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
