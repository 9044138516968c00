package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Labels and annotations the suite uses.
const (
	// ProbeLabel marks the pods the suite puts on Nodes to see whether their Machine's deletion
	// drained them.
	ProbeLabel = "faults.machineapi.dev/drain-probe"

	simInstanceLabel    = "sim.machineapi.dev/instance"
	simUnreachable      = "sim.machineapi.dev/unreachable"
	simVanish           = "sim.machineapi.dev/vanish"
	simProviderIDPrefix = "sim:///"
	drainTimeoutReason  = "DrainTimeout"
)

// Expectations are what a scenario allows on top of the invariants: the documented exceptions
// it provokes on purpose.
type Expectations struct {
	// MaxRemediations is how many Machines health checks may delete during the scenario.
	MaxRemediations int
	// ExemptNodes are Nodes the scenario itself deleted: pods left on them are not an undrained
	// deletion. The value says why.
	ExemptNodes map[string]string
	// InstanceMissing are Machines the scenario made vanish: phase Failed (InstanceMissing)
	// without an instance is what they must show.
	InstanceMissing map[string]bool
	// NotReadySets are MachineSets and MachineDeployments whose Machines are not expected to be
	// Ready (bad input): only their counts must converge.
	NotReadySets map[string]bool
	// RemoteNodes: the scenario's Machines have their Nodes in a workload cluster; the sim
	// provider still registers a Node per instance in the management cluster, which nothing
	// deletes (see docs/reliability.md), so those are not counted as leftovers.
	RemoteNodes bool
	// BoundEarly are pods (namespace/name) the scenario binds to a Node before its
	// initialization on purpose; the value says why.
	BoundEarly map[string]string
}

// Subject is what the invariants look at: one scenario's namespace and its simulated cloud.
type Subject struct {
	Client    client.Client // reads straight from the API server
	Namespace string
	SimDir    string
	History   *InstanceHistory
	Tracker   *Tracker
	Expect    Expectations
}

// CheckInstances: every Machine with an instance has exactly one, every instance belongs to a
// Machine that exists (no orphan left running), no instance was ever created twice, and every
// sim Node belongs to a live instance.
func CheckInstances(ctx context.Context, s Subject) []string {
	var bad []string
	machines := &v1beta1.MachineList{}
	if err := s.Client.List(ctx, machines, client.InNamespace(s.Namespace)); err != nil {
		return []string{fmt.Sprintf("listing Machines: %v", err)}
	}
	insts, err := ReadInstances(s.SimDir)
	if err != nil {
		return []string{fmt.Sprintf("reading the sim instances in %s: %v", s.SimDir, err)}
	}
	byUID := map[types.UID]*v1beta1.Machine{}
	for i := range machines.Items {
		m := &machines.Items[i]
		byUID[m.UID] = m
		inst, ok := insts[m.UID]
		switch {
		case m.Spec.ProviderID == "" && ok && m.DeletionTimestamp == nil && m.Status.Phase != v1beta1.MachinePhaseProvisioning:
			bad = append(bad, fmt.Sprintf("Machine %s has an instance but no providerID in phase %q", m.Name, m.Status.Phase))
		case m.Spec.ProviderID == "" || !strings.HasPrefix(m.Spec.ProviderID, simProviderIDPrefix):
		case !ok && s.Expect.InstanceMissing[m.Name]:
			if m.Status.FailureReason == nil || *m.Status.FailureReason != v1beta1.InstanceMissingFailure {
				bad = append(bad, fmt.Sprintf("Machine %s lost its instance (on purpose) but is %q, not Failed/InstanceMissing", m.Name, m.Status.Phase))
			}
		case !ok && m.DeletionTimestamp == nil:
			bad = append(bad, fmt.Sprintf("Machine %s (%s, phase %s) has no instance: it was lost", m.Name, m.Spec.ProviderID, m.Status.Phase))
		case ok && inst.ProviderID != m.Spec.ProviderID:
			bad = append(bad, fmt.Sprintf("Machine %s says %s but its instance is %s", m.Name, m.Spec.ProviderID, inst.ProviderID))
		}
	}
	for id, inst := range insts {
		if inst.Namespace != s.Namespace {
			continue
		}
		if _, ok := byUID[id]; !ok {
			bad = append(bad, fmt.Sprintf("orphan instance %s (Machine %s/%s, uid %s) is running without its Machine", inst.ProviderID, inst.Namespace, inst.Machine, id))
		}
	}
	if s.History != nil {
		s.History.Sample()
		if re := s.History.Recreated(); len(re) > 0 {
			bad = append(bad, "instances created more than once (duplicates): "+describeUIDs(re, func(id types.UID, n int) string {
				return fmt.Sprintf("machine uid %s: %d instances", id, n)
			}))
		}
	}

	// Nodes of this scenario's instances: at most one per instance, none without its instance.
	ours := map[types.UID]string{}
	if s.Tracker != nil {
		for _, r := range s.Tracker.Machines(s.Namespace) {
			ours[r.UID] = r.Name
		}
	}
	for id := range byUID {
		ours[id] = byUID[id].Name
	}
	nodes := &corev1.NodeList{}
	if err := s.Client.List(ctx, nodes, client.HasLabels{simInstanceLabel}); err != nil {
		return append(bad, fmt.Sprintf("listing Nodes: %v", err))
	}
	perInstance := map[string][]string{}
	for _, n := range nodes.Items {
		id := types.UID(n.Labels[simInstanceLabel])
		name, mine := ours[id]
		if !mine {
			continue
		}
		perInstance[string(id)] = append(perInstance[string(id)], n.Name)
		if _, alive := insts[id]; !alive && !s.Expect.RemoteNodes && s.Expect.ExemptNodes[n.Name] == "" && !s.Expect.InstanceMissing[name] {
			bad = append(bad, fmt.Sprintf("Node %s of Machine %s is left behind: its instance is gone", n.Name, name))
		}
	}
	for id, names := range perInstance {
		if len(names) > 1 {
			bad = append(bad, fmt.Sprintf("instance %s has %d Nodes: %v", id, len(names), names))
		}
	}
	return bad
}

// CheckInitialization: no pod of any namespace was bound to a Node of the scenario's Machines
// before that Node's initialization, if it registered with the initialization taint
// (v1beta1.NodeUninitializedTaintKey): every binding to it has a smaller resourceVersion than
// the first version of the Node seen without the taint. Judged from the tracker's watches of
// Nodes and pods by resourceVersion (BoundBeforeInitialization says why that order is sound),
// not by when the watches delivered.
func CheckInitialization(s Subject) []string {
	return BoundBeforeInitialization(s.Tracker.NodesOf(s.Namespace), s.Tracker.Nodes(), s.Tracker.Bindings(), s.Expect.BoundEarly)
}

// CheckDrain: a probe pod on a Node that no longer exists shows its Machine's deletion did not
// drain it, unless that Machine was excluded from draining, gave up after its drain timeout, was
// unreachable (the pod was evicted but no kubelet could finish it), or the scenario deleted the
// Node itself.
func CheckDrain(ctx context.Context, s Subject) []string {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(s.Namespace), client.HasLabels{ProbeLabel}); err != nil {
		return []string{fmt.Sprintf("listing probe pods: %v", err)}
	}
	byNode := map[string]MachineRecord{}
	if s.Tracker != nil {
		for _, r := range s.Tracker.Machines(s.Namespace) {
			for _, n := range r.Nodes {
				byNode[n] = r
			}
		}
	}
	var bad []string
	for _, p := range pods.Items {
		node := p.Spec.NodeName
		err := s.Client.Get(ctx, types.NamespacedName{Name: node}, &corev1.Node{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			bad = append(bad, fmt.Sprintf("getting Node %s: %v", node, err))
			continue
		}
		if why := s.Expect.ExemptNodes[node]; why != "" {
			continue
		}
		r, known := byNode[node]
		if !known {
			continue // not a Machine's Node
		}
		_, excluded := r.Annotations[v1beta1.ExcludeNodeDrainingAnnotation]
		_, unreachable := r.Annotations[simUnreachable]
		switch {
		case excluded || r.HasEvent(drainTimeoutReason) || s.Expect.RemoteNodes:
		case p.DeletionTimestamp != nil && unreachable:
		case p.DeletionTimestamp != nil:
			bad = append(bad, fmt.Sprintf("Machine %s: pod %s was evicted but Node %s was deleted before the pod finished (events: %s)", r.Name, p.Name, node, eventSummary(r)))
		default:
			bad = append(bad, fmt.Sprintf("Machine %s was deleted without draining Node %s: pod %s is still bound to it (events: %s)", r.Name, node, p.Name, eventSummary(r)))
		}
	}
	return bad
}

// CheckRemediations: health checks deleted no more Machines than the scenario allows, and none
// while their check reported RemediationAllowed=False.
func CheckRemediations(ctx context.Context, s Subject) []string {
	var bad []string
	if got := s.Tracker.Remediations(s.Namespace); len(got) > s.Expect.MaxRemediations {
		sort.Strings(got)
		bad = append(bad, fmt.Sprintf("%d Machines remediated (at most %d allowed): %v", len(got), s.Expect.MaxRemediations, got))
	}
	checks := &v1beta1.MachineHealthCheckList{}
	if err := s.Client.List(ctx, checks, client.InNamespace(s.Namespace)); err != nil {
		return append(bad, fmt.Sprintf("listing MachineHealthChecks: %v", err))
	}
	// A check deletes in the reconcile that also writes RemediationAllowed, and the watch sees the
	// two apart: a remediation counts as made while not allowed only when the condition was False
	// a margin before it and still False a margin after it.
	const margin = 2 * time.Second
	stateAt := func(hist []ConditionChange, at time.Time) string {
		state := ""
		for _, c := range hist {
			if c.Seen.Before(at) {
				state = c.Status
			}
		}
		return state
	}
	for _, h := range checks.Items {
		hist := s.Tracker.RemediationAllowedHistory(types.NamespacedName{Namespace: h.Namespace, Name: h.Name})
		for _, r := range s.Tracker.Machines(s.Namespace) {
			if !r.Remediated {
				continue
			}
			if stateAt(hist, r.Deleting.Add(-margin)) == string(metav1.ConditionFalse) && stateAt(hist, r.Deleting.Add(margin)) == string(metav1.ConditionFalse) {
				bad = append(bad, fmt.Sprintf("Machine %s was remediated at %s while %s reported RemediationAllowed=False",
					r.Name, r.Deleting.Format("15:04:05.000"), h.Name))
			}
		}
	}
	return bad
}

// CheckConverged: every MachineDeployment and MachineSet has exactly spec.replicas Machines, all
// Ready (unless the scenario says otherwise), status caught up with the spec, and no Machine is
// still deleting.
func CheckConverged(ctx context.Context, s Subject) []string {
	var bad []string
	mds := &v1beta1.MachineDeploymentList{}
	sets := &v1beta1.MachineSetList{}
	machines := &v1beta1.MachineList{}
	for _, l := range []client.ObjectList{mds, sets, machines} {
		if err := s.Client.List(ctx, l, client.InNamespace(s.Namespace)); err != nil {
			return []string{fmt.Sprintf("listing: %v", err)}
		}
	}
	owned := map[types.UID]int{}
	ready := map[types.UID]int{}
	for _, m := range machines.Items {
		if m.DeletionTimestamp != nil {
			bad = append(bad, fmt.Sprintf("Machine %s is still deleting (%s)", m.Name, conditionText(m.Status.Conditions, v1beta1.DeletingCondition)))
			continue
		}
		if ref := metav1.GetControllerOf(&m); ref != nil {
			owned[ref.UID]++
			if meta.IsStatusConditionTrue(m.Status.Conditions, v1beta1.ReadyCondition) {
				ready[ref.UID]++
			}
		}
	}
	for _, md := range mds.Items {
		want := ptrInt(md.Spec.Replicas, 1)
		st := md.Status
		switch {
		case md.DeletionTimestamp != nil:
			bad = append(bad, fmt.Sprintf("MachineDeployment %s is still deleting", md.Name))
		case st.ObservedGeneration != md.Generation:
			bad = append(bad, fmt.Sprintf("MachineDeployment %s: observedGeneration %d, generation %d", md.Name, st.ObservedGeneration, md.Generation))
		case st.Replicas != want || st.UpdatedReplicas != want:
			bad = append(bad, fmt.Sprintf("MachineDeployment %s: %d replicas (%d updated), want %d", md.Name, st.Replicas, st.UpdatedReplicas, want))
		case !s.Expect.NotReadySets[md.Name] && st.ReadyReplicas != want:
			bad = append(bad, fmt.Sprintf("MachineDeployment %s: %d of %d ready", md.Name, st.ReadyReplicas, want))
		}
	}
	for _, ms := range sets.Items {
		want := ptrInt(ms.Spec.Replicas, 1)
		notReadyOK := s.Expect.NotReadySets[ms.Name] || s.Expect.NotReadySets[ms.Labels[v1beta1.DeploymentNameLabel]]
		switch {
		case ms.DeletionTimestamp != nil:
			bad = append(bad, fmt.Sprintf("MachineSet %s is still deleting", ms.Name))
		case int32(owned[ms.UID]) != want:
			bad = append(bad, fmt.Sprintf("MachineSet %s has %d Machines, want %d", ms.Name, owned[ms.UID], want))
		case ms.Status.ObservedGeneration != ms.Generation || ms.Status.Replicas != want:
			bad = append(bad, fmt.Sprintf("MachineSet %s: status says %d replicas (generation %d observed of %d), want %d",
				ms.Name, ms.Status.Replicas, ms.Status.ObservedGeneration, ms.Generation, want))
		case !notReadyOK && int32(ready[ms.UID]) != want:
			bad = append(bad, fmt.Sprintf("MachineSet %s: %d of %d Machines Ready", ms.Name, ready[ms.UID], want))
		}
	}
	return bad
}

// CheckLinks: no Machine of the namespace was ever linked to a second Node, and (when strict) no
// link was ever dropped.
func CheckLinks(s Subject, strict bool) []string {
	var bad []string
	for _, r := range s.Tracker.Machines(s.Namespace) {
		if r.Relinks > 0 {
			bad = append(bad, fmt.Sprintf("Machine %s was linked to %d Nodes in turn: %v", r.Name, len(r.Nodes), r.Nodes))
		}
		if strict && r.LinkDrops > 0 && r.Deleting.IsZero() {
			bad = append(bad, fmt.Sprintf("Machine %s lost its NodeLinked=True %d time(s)", r.Name, r.LinkDrops))
		}
	}
	return bad
}

func conditionText(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "no " + typ + " condition"
	}
	return fmt.Sprintf("%s=%s/%s: %s", typ, c.Status, c.Reason, c.Message)
}

func eventSummary(r MachineRecord) string {
	var parts []string
	for _, e := range r.Events {
		parts = append(parts, e.Reason)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func ptrInt(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// CheckDisruption: no deletion on purpose of a Machine with a Node started while its
// MachineDeployment's disruption budget was used up. When it started, the deployment's Machines
// with a Node being deleted (it included) were at most the budget's nodes. Judged for the budgets
// in force always and for every reason (no schedule, no reasons: a scenario that sets others
// checks them itself); losses that are not on purpose (an instance that vanished or was
// interrupted) count against the budget, but are not judged.
func CheckDisruption(ctx context.Context, s Subject) []string {
	mds := &v1beta1.MachineDeploymentList{}
	if err := s.Client.List(ctx, mds, client.InNamespace(s.Namespace)); err != nil {
		return []string{fmt.Sprintf("listing MachineDeployments: %v", err)}
	}
	var bad []string
	for _, md := range mds.Items {
		bound, name := budgetBound(&md)
		if bound < 0 {
			continue
		}
		var disrupted []MachineRecord
		for _, r := range s.Tracker.Machines(s.Namespace) {
			if r.AtDeletion != nil && r.AtDeletion.Status.NodeRef != nil && r.AtDeletion.Labels[v1beta1.DeploymentNameLabel] == md.Name {
				disrupted = append(disrupted, r)
			}
		}
		for _, r := range disrupted {
			if lost := r.AtDeletion.Status; (lost.FailureReason != nil && *lost.FailureReason == v1beta1.InstanceMissingFailure) || lost.Interruption != nil {
				continue
			}
			var at []string
			for _, o := range disrupted {
				if !o.Deleting.After(r.Deleting) && (o.Gone.IsZero() || o.Gone.After(r.Deleting)) {
					at = append(at, o.Name)
				}
			}
			if len(at) > bound {
				sort.Strings(at)
				bad = append(bad, fmt.Sprintf("MachineDeployment %s: the deletion of Machine %s started at %s with %d Machines being deleted (%s), over budget %s's %d",
					md.Name, r.Name, r.Deleting.Format("15:04:05.000"), len(at), strings.Join(at, ", "), name, bound))
			}
		}
	}
	return bad
}

// budgetBound is the smallest nodes of md's budgets that are always in force for every reason,
// resolved against its replicas as the controllers resolve it, and that budget's name; -1 when
// there is none.
func budgetBound(md *v1beta1.MachineDeployment) (int, string) {
	if md.Spec.Disruption == nil {
		return -1, ""
	}
	bound, name := -1, ""
	for i, b := range md.Spec.Disruption.Budgets {
		if b.Schedule != "" || len(b.Reasons) > 0 {
			continue
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&b.Nodes, int(ptrInt(md.Spec.Replicas, 1)), false)
		if err != nil {
			continue
		}
		if b.Nodes.Type == intstr.String && n == 0 && b.Nodes.StrVal != "0%" {
			n = 1
		}
		if bound < 0 || n < bound {
			bound, name = n, b.Name
			if name == "" {
				name = fmt.Sprintf("budget-%d", i)
			}
		}
	}
	return bound, name
}
