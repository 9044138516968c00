package faults

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// NodeRecord is one Node (one UID: a name deleted and registered again is a second record) as the
// suite's watch saw it: when it registered and, if it registered with the initialization taint
// (v1beta1.NodeUninitializedTaintKey), the version that no longer carried it.
type NodeRecord struct {
	Name string
	UID  types.UID
	// Instance is the sim provider's instance label: the UID of the Machine the Node runs.
	Instance string
	// FirstRV is the resourceVersion of the first version seen: its creation, for a Node
	// registered while the suite runs.
	FirstRV string
	// GatedRV is the resourceVersion of the first version seen with the initialization taint;
	// empty for a Node never seen with it.
	GatedRV string
	// InitializedRV is the resourceVersion of the first version seen without the taint after
	// GatedRV: the node linker's initializing patch. Empty while the Node still carries it.
	InitializedRV string
	// Wall-clock times of the same observations, for post-mortems only: the two watches deliver
	// independently, so the order of a Node's and a pod's times proves nothing.
	Registered, Initialized, Gone time.Time
}

// Binding is a pod bound to a Node (spec.nodeName set, by the scheduler's binding or at
// creation), as the suite's watch first saw it.
type Binding struct {
	Namespace, Name string
	UID             types.UID
	Node            string
	// RV is the resourceVersion of the first version of the pod seen with spec.nodeName: the
	// binding's write.
	RV   string
	Seen time.Time
}

// Key is namespace/name.
func (b Binding) Key() string { return b.Namespace + "/" + b.Name }

func (t *Tracker) observeNode(n *corev1.Node, gone bool) {
	now := time.Now()
	gated := slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == v1beta1.NodeUninitializedTaintKey })
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.nodes[n.UID]
	if r == nil {
		r = &NodeRecord{Name: n.Name, UID: n.UID, Instance: n.Labels[simInstanceLabel], FirstRV: n.ResourceVersion, Registered: now}
		t.nodes[n.UID] = r
	}
	switch {
	case gated && r.GatedRV == "":
		r.GatedRV = n.ResourceVersion
	case !gated && r.GatedRV != "" && r.InitializedRV == "":
		r.InitializedRV, r.Initialized = n.ResourceVersion, now
	}
	if gone {
		r.Gone = now
	}
}

func (t *Tracker) observePod(p *corev1.Pod, _ bool) {
	if p.Spec.NodeName == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.bindings[p.UID]; seen {
		return
	}
	t.bindings[p.UID] = &Binding{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Node: p.Spec.NodeName, RV: p.ResourceVersion, Seen: time.Now()}
}

// Nodes returns copies of the records of every Node seen.
func (t *Tracker) Nodes() []NodeRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return copies(t.nodes)
}

// Bindings returns every pod binding seen, in any namespace.
func (t *Tracker) Bindings() []Binding {
	t.mu.Lock()
	defer t.mu.Unlock()
	return copies(t.bindings)
}

// copies returns a copy of each record of m, in no particular order, so that the caller reads
// them without the tracker's lock while the watches go on updating the originals.
func copies[K comparable, V any](m map[K]*V) []V {
	out := make([]V, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	return out
}

// BoundBeforeInitialization returns, for each binding to one of ours (Nodes seen with the
// initialization taint) made before that Node's initialization, what happened. A binding names a
// Node by name; it belongs to the record of that name that existed when it was written (the last
// one registered before it), or to the first one registered after it (a pod bound to a name no
// Node had yet lands on the Node that registers with it). all holds every Node record, to tell
// a name's records apart; exempt holds the pods (namespace/name) a scenario binds early on
// purpose.
//
// Node and pod resourceVersions are compared with each other, which the API promises nothing
// about in general (a resourceVersion is opaque; CompareResourceVersion means it within one
// resource). Here it is sound: the suite's kube-apiserver keeps every resource in one etcd (no
// --etcd-servers-overrides), and a resourceVersion is the etcd revision of the write that made
// that version, one counter for the whole key space; so a pod version with a smaller
// resourceVersion than a Node version was written before it. The wall-clock order in which the
// two watches deliver is no such proof. The watches see every version in order while they last;
// after a relist (the API server restarted and the watch cache no longer had the versions asked
// for), the first version seen without the taint may be later than the one that removed it, so a
// binding right after an initialization during the outage could be misjudged: none of the
// scenarios binds there.
func BoundBeforeInitialization(ours, all []NodeRecord, bindings []Binding, exempt map[string]string) []string {
	byName := map[string][]NodeRecord{}
	for _, r := range all {
		byName[r.Name] = append(byName[r.Name], r)
	}
	var bad []string
	before := func(a, b string) (bool, error) {
		c, err := resourceversion.CompareResourceVersion(a, b)
		return c < 0, err
	}
	for _, recs := range byName {
		sort.Slice(recs, func(i, j int) bool { lt, _ := before(recs[i].FirstRV, recs[j].FirstRV); return lt })
	}
	isOurs := map[types.UID]bool{}
	for _, r := range ours {
		if r.GatedRV != "" {
			isOurs[r.UID] = true
		}
	}
	for _, b := range bindings {
		recs := byName[b.Node]
		if len(recs) == 0 || exempt[b.Key()] != "" {
			continue
		}
		node := recs[0]
		for _, r := range recs[1:] {
			if lt, _ := before(b.RV, r.FirstRV); lt {
				break
			}
			node = r
		}
		if !isOurs[node.UID] {
			continue
		}
		if node.InitializedRV == "" {
			state := "still carries it"
			if !node.Gone.IsZero() {
				state = "was deleted still carrying it"
			}
			bad = append(bad, fmt.Sprintf("pod %s was bound to Node %s (resourceVersion %s) before its initialization: the Node registered with %s at resourceVersion %s and %s",
				b.Key(), b.Node, b.RV, v1beta1.NodeUninitializedTaintKey, node.GatedRV, state))
			continue
		}
		lt, err := before(b.RV, node.InitializedRV)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("pod %s on Node %s: comparing resourceVersions %s and %s: %v", b.Key(), b.Node, b.RV, node.InitializedRV, err))
		case lt:
			bad = append(bad, fmt.Sprintf("pod %s was bound to Node %s at resourceVersion %s, before its initialization: %s was removed at resourceVersion %s",
				b.Key(), b.Node, b.RV, v1beta1.NodeUninitializedTaintKey, node.InitializedRV))
		}
	}
	sort.Strings(bad)
	return bad
}

// describeNodes describes the Node records, one line each, with the pods bound to them, for
// post-mortems.
func describeNodes(recs []NodeRecord, bindings []Binding) string {
	sort.Slice(recs, func(i, j int) bool { return recs[i].Registered.Before(recs[j].Registered) })
	pods := map[string][]string{}
	for _, b := range bindings {
		pods[b.Node] = append(pods[b.Node], fmt.Sprintf("%s@%s", b.Key(), b.RV))
	}
	ts := func(tm time.Time) string {
		if tm.IsZero() {
			return "-"
		}
		return tm.Format("15:04:05.000")
	}
	var b strings.Builder
	for _, r := range recs {
		sort.Strings(pods[r.Name])
		fmt.Fprintf(&b, "Node %s uid=%s registered=%s@%s gated@%s initialized=%s@%s gone=%s pods=%v\n",
			r.Name, r.UID, ts(r.Registered), r.FirstRV, orDash(r.GatedRV), ts(r.Initialized), orDash(r.InitializedRV), ts(r.Gone), pods[r.Name])
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
