package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/hack/tools/watch"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/nodelink"
)

// remediatingReason is the HealthCheckSucceeded reason a MachineHealthCheck writes on a Machine
// just before it deletes it (machinehealthcheck.ReasonRemediating).
const remediatingReason = "Remediating"

// MachineRecord is the life of one Machine as the suite's watch saw it, kept after the Machine
// is gone: what its deletion looked like is judged from it.
type MachineRecord struct {
	UID       types.UID
	Namespace string
	Name      string
	// Last is the Machine as last seen (before it disappeared, for a deleted one).
	Last *v1beta1.Machine
	// AtDeletion is the Machine as first seen with a deletionTimestamp.
	AtDeletion *v1beta1.Machine
	FirstSeen  time.Time
	// Running is when the Machine was first seen Running (watch events arrive in the API
	// server's order, so two records' times order their changes).
	Running  time.Time
	Deleting time.Time
	Gone     time.Time
	// Remediated: when its deletion was first seen, HealthCheckSucceeded was False/Remediating.
	Remediated bool
	// Nodes are the Node names status.nodeRef ever held; NodeUIDs the Node UIDs.
	Nodes    []string
	NodeUIDs []types.UID
	// Relinks counts changes of status.nodeRef from one Node to another.
	Relinks int
	// LinkDrops counts NodeLinked transitions from True to anything else.
	LinkDrops int
	// Annotations ever carried (a fault knob set and removed still counts).
	Annotations map[string]bool
	// Events are the reasons of the events recorded about this Machine, in order seen.
	Events []EventRecord
}

// EventRecord is one event about an object.
type EventRecord struct {
	Type, Reason, Note string
	Seen               time.Time
}

// ConditionChange is one observed change of a condition of a MachineHealthCheck.
type ConditionChange struct {
	Status, Reason string
	Seen           time.Time
}

// Tracker records, from watches of the suite's own, every Machine's life, the events about
// Machines and MachineHealthChecks, each health check's RemediationAllowed history, every Node's
// registration and initialization, and every pod's binding (bindings.go). The watches survive API
// server restarts (client-go relists).
type Tracker struct {
	mu       sync.Mutex
	machines map[types.UID]*MachineRecord
	events   map[types.UID][]EventRecord // by regarding UID, including events seen before the object
	mhcAllow map[types.NamespacedName][]ConditionChange
	peak     map[string]int // most Machines of a namespace alive and not deleting at once
	nodes    map[types.UID]*NodeRecord
	bindings map[types.UID]*Binding // by pod UID
	changed  chan struct{}
}

// NewTracker registers the watches on c; start c afterwards.
func NewTracker(ctx context.Context, c cache.Cache) (*Tracker, error) {
	t := &Tracker{machines: map[types.UID]*MachineRecord{}, events: map[types.UID][]EventRecord{},
		mhcAllow: map[types.NamespacedName][]ConditionChange{}, peak: map[string]int{}, changed: make(chan struct{}, 1),
		nodes: map[types.UID]*NodeRecord{}, bindings: map[types.UID]*Binding{}}
	inf, err := c.GetInformer(ctx, &v1beta1.Machine{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(watch.Handler(t.observeMachine)); err != nil {
		return nil, err
	}
	ev, err := c.GetInformer(ctx, &eventsv1.Event{})
	if err != nil {
		return nil, err
	}
	if _, err := ev.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.observeEvent(o) },
		UpdateFunc: func(_, o any) { t.observeEvent(o) },
	}); err != nil {
		return nil, err
	}
	mhc, err := c.GetInformer(ctx, &v1beta1.MachineHealthCheck{})
	if err != nil {
		return nil, err
	}
	if _, err := mhc.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.observeMHC(o) },
		UpdateFunc: func(_, o any) { t.observeMHC(o) },
	}); err != nil {
		return nil, err
	}
	for obj, h := range map[client.Object]toolscache.ResourceEventHandler{
		&corev1.Node{}: watch.Handler(t.observeNode),
		&corev1.Pod{}:  watch.Handler(t.observePod),
	} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Tracker) observeMachine(m *v1beta1.Machine, gone bool) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.machines[m.UID]
	if r == nil {
		r = &MachineRecord{UID: m.UID, Namespace: m.Namespace, Name: m.Name, FirstSeen: now, Annotations: map[string]bool{}}
		t.machines[m.UID] = r
	}
	prev := r.Last
	r.Last = m.DeepCopy()
	for k := range m.Annotations {
		r.Annotations[k] = true
	}
	if ref := m.Status.NodeRef; ref != nil {
		n := len(r.Nodes)
		switch {
		case n == 0:
			r.Nodes, r.NodeUIDs = append(r.Nodes, ref.Name), append(r.NodeUIDs, ref.UID)
		case r.Nodes[n-1] != ref.Name || (ref.UID != "" && r.NodeUIDs[n-1] != "" && r.NodeUIDs[n-1] != ref.UID):
			r.Relinks++
			r.Nodes, r.NodeUIDs = append(r.Nodes, ref.Name), append(r.NodeUIDs, ref.UID)
		case r.NodeUIDs[n-1] == "":
			r.NodeUIDs[n-1] = ref.UID
		}
	}
	if prev != nil && meta.IsStatusConditionTrue(prev.Status.Conditions, nodelink.ConditionNodeLinked) &&
		!meta.IsStatusConditionTrue(m.Status.Conditions, nodelink.ConditionNodeLinked) {
		r.LinkDrops++
	}
	if m.Status.Phase == v1beta1.MachinePhaseRunning && r.Running.IsZero() {
		r.Running = now
	}
	if m.DeletionTimestamp != nil && r.AtDeletion == nil {
		r.Deleting = now
		r.AtDeletion = m.DeepCopy()
		if c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition); c != nil &&
			c.Status == metav1.ConditionFalse && c.Reason == remediatingReason {
			r.Remediated = true
		}
	}
	if gone {
		r.Gone = now
	}
	r.Events = t.events[m.UID]
	active := 0
	for _, o := range t.machines {
		if o.Namespace == m.Namespace && o.Gone.IsZero() && o.AtDeletion == nil {
			active++
		}
	}
	t.peak[m.Namespace] = max(t.peak[m.Namespace], active)
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *Tracker) observeEvent(o any) {
	e, ok := o.(*eventsv1.Event)
	if !ok || e.Regarding.UID == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, seen := range t.events[e.Regarding.UID] {
		if seen.Reason == e.Reason && seen.Note == e.Note {
			return // a series update of an event already recorded
		}
	}
	rec := EventRecord{Type: e.Type, Reason: e.Reason, Note: e.Note, Seen: time.Now()}
	t.events[e.Regarding.UID] = append(t.events[e.Regarding.UID], rec)
	if r := t.machines[e.Regarding.UID]; r != nil {
		r.Events = t.events[e.Regarding.UID]
	}
}

func (t *Tracker) observeMHC(o any) {
	h, ok := o.(*v1beta1.MachineHealthCheck)
	if !ok {
		return
	}
	c := meta.FindStatusCondition(h.Status.Conditions, v1beta1.RemediationAllowedCondition)
	if c == nil {
		return
	}
	key := types.NamespacedName{Namespace: h.Namespace, Name: h.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	hist := t.mhcAllow[key]
	if n := len(hist); n > 0 && hist[n-1].Status == string(c.Status) && hist[n-1].Reason == c.Reason {
		return
	}
	t.mhcAllow[key] = append(hist, ConditionChange{Status: string(c.Status), Reason: c.Reason, Seen: time.Now()})
}

// Machines returns copies of the records of every Machine ever seen in namespace ns.
func (t *Tracker) Machines(ns string) []MachineRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []MachineRecord
	for _, r := range t.machines {
		if r.Namespace == ns {
			cp := *r
			cp.Events = append([]EventRecord(nil), r.Events...)
			cp.Nodes = append([]string(nil), r.Nodes...)
			out = append(out, cp)
		}
	}
	return out
}

// Live returns how many Machines of ns exist (not gone) and how many of those are deleting.
func (t *Tracker) Live(ns string) (live, deleting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.machines {
		if r.Namespace == ns && r.Gone.IsZero() {
			live++
			if !r.Deleting.IsZero() {
				deleting++
			}
		}
	}
	return live, deleting
}

// CountPhase returns how many live Machines of ns are in phase (not deleting).
func (t *Tracker) CountPhase(ns string, phases ...v1beta1.MachinePhase) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, r := range t.machines {
		if r.Namespace != ns || !r.Gone.IsZero() || r.Last.DeletionTimestamp != nil {
			continue
		}
		for _, p := range phases {
			if r.Last.Status.Phase == p {
				n++
				break
			}
		}
	}
	return n
}

// Peak returns the most Machines of ns seen alive and not deleting at the same time.
func (t *Tracker) Peak(ns string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.peak[ns]
}

// Remediations returns the Machines of ns a health check deleted.
func (t *Tracker) Remediations(ns string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, r := range t.machines {
		if r.Namespace == ns && r.Remediated {
			out = append(out, r.Name)
		}
	}
	return out
}

// RemediationAllowedHistory returns the changes of a health check's RemediationAllowed condition.
func (t *Tracker) RemediationAllowedHistory(key types.NamespacedName) []ConditionChange {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]ConditionChange(nil), t.mhcAllow[key]...)
}

// EventsFor returns the events recorded about the object with this UID.
func (t *Tracker) EventsFor(uid types.UID) []EventRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]EventRecord(nil), t.events[uid]...)
}

// WaitFor calls cond whenever a Machine changes (and at least every 500ms) until it returns true
// or timeout passes.
func (t *Tracker) WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("not reached within %s", timeout)
		case <-tick.C:
		case <-t.changed:
		}
	}
	return nil
}

// Dump describes every Machine ever seen in ns, one line each, for post-mortems.
func (t *Tracker) Dump(ns string) string {
	recs := t.Machines(ns)
	sort.Slice(recs, func(i, j int) bool { return recs[i].FirstSeen.Before(recs[j].FirstSeen) })
	var b strings.Builder
	ts := func(tm time.Time) string {
		if tm.IsZero() {
			return "-"
		}
		return tm.Format("15:04:05.000")
	}
	for _, r := range recs {
		fmt.Fprintf(&b, "%s uid=%s seen=%s deleting=%s gone=%s phase=%s providerID=%s nodes=%v remediated=%v relinks=%d linkDrops=%d events=%s\n",
			r.Name, r.UID, ts(r.FirstSeen), ts(r.Deleting), ts(r.Gone), r.Last.Status.Phase, r.Last.Spec.ProviderID, r.Nodes,
			r.Remediated, r.Relinks, r.LinkDrops, eventSummary(r))
		for _, c := range r.Last.Status.Conditions {
			fmt.Fprintf(&b, "    %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	b.WriteString(describeNodes(t.NodesOf(ns), t.Bindings()))
	return b.String()
}

// NodesOf returns the records of the Nodes of ns's Machines: those of their sim instances, and
// those their status.nodeRef ever named.
func (t *Tracker) NodesOf(ns string) []NodeRecord {
	uids, names := map[string]bool{}, map[string]bool{}
	for _, r := range t.Machines(ns) {
		uids[string(r.UID)] = true
		for _, n := range r.Nodes {
			names[n] = true
		}
	}
	var out []NodeRecord
	for _, r := range t.Nodes() {
		if uids[r.Instance] || names[r.Name] {
			out = append(out, r)
		}
	}
	return out
}

// HasEvent reports whether the record has an event with one of the reasons.
func (r MachineRecord) HasEvent(reasons ...string) bool {
	for _, e := range r.Events {
		for _, want := range reasons {
			if e.Reason == want {
				return true
			}
		}
	}
	return false
}
