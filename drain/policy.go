package drain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The drain policy: two pure functions that every controller draining a node consults, so that a
// drain means the same wherever it runs (machine-manager in its own cluster, cluster-manager in a
// workload cluster). DecideNode decides about the drain as a whole: wait for what holds it, skip
// it, give up, or run a step, when it gives up and by when its pods must be gone. DecidePods
// decides, within a step, what happens to each pod of the node: skip, evict, delete or wait, in
// which order group, by which rule. Neither makes an API call or reads a clock.

// NodeRequest is what the drain policy knows about the drain of one node as a whole. The
// controller that drains fills it in from its own objects (this package knows nothing of
// Machines: a Machine's hooks, annotations and timeouts are translated by its caller) and keeps
// StartedAt between calls, where it survives a restart.
type NodeRequest struct {
	// Now is the time of the decision.
	Now time.Time
	// HeldBy names what must let go before draining starts, such as a Machine's preDrain
	// lifecycle hooks other than the caller's own. While it is not empty the drain waits.
	HeldBy []string
	// Skip, when not empty, says why the node is not drained at all (draining excluded, no
	// node, ...). It is considered once nothing holds the drain.
	Skip string
	// StartedAt is when draining began: the NodeDecision.StartedAt the caller recorded when a
	// decision Started it. Zero while draining has not begun.
	StartedAt time.Time
	// Timeout bounds the drain, counted from StartedAt (a Machine's nodeDrainTimeoutSeconds):
	// once it has passed the drain gives up. 0 or less means no bound.
	Timeout time.Duration
	// PodDeadline, counted from StartedAt (a Machine's drainDeadlineSeconds), is by when the
	// pods that have to leave must be gone: from PodDeadline minus its grace period on, a pod
	// still holding the drain is deleted rather than evicted (Step.PodDeadline). 0 or less means
	// none. A Timeout no longer than PodDeadline gives up first, so PodDeadline never applies.
	PodDeadline time.Duration
}

// NodeAction is what the drain policy decides about a node's drain as a whole.
type NodeAction string

const (
	// NodeWait: something in NodeRequest.HeldBy holds the drain; it has not begun (or, if it had,
	// does not go on) until that lets go.
	NodeWait NodeAction = "Wait"
	// NodeSkip: there is nothing to drain (NodeRequest.Skip); go on without draining.
	NodeSkip NodeAction = "Skip"
	// NodeGiveUp: the timeout has passed since draining began; stop draining and go on, leaving
	// whatever pods are still on the node.
	NodeGiveUp NodeAction = "GiveUp"
	// NodeDrain: run one drain step (Drainer.Drain, with NodeDecision.Step).
	NodeDrain NodeAction = "Drain"
)

// NodeDecision is the drain policy's answer to a NodeRequest.
type NodeDecision struct {
	Action NodeAction
	// StartedAt is when draining began, for NodeDrain and NodeGiveUp: NodeRequest.StartedAt, or
	// Now when draining begins with this decision (Started). Zero otherwise.
	StartedAt time.Time
	// Started is true when draining begins with this decision: the caller records StartedAt
	// and passes it in every later NodeRequest.
	Started bool
	// Deadline is when the drain gives up, StartedAt plus the timeout, for NodeDrain and
	// NodeGiveUp; zero when nothing bounds the drain.
	Deadline time.Time
	// PodDeadline is StartedAt plus NodeRequest.PodDeadline, for NodeDrain and NodeGiveUp: by
	// then the pods holding the drain are deleted (Step.PodDeadline). Zero when there is none.
	PodDeadline time.Time
}

// Step returns the Step a NodeDrain decision allows, with the caller's rules.
func (d NodeDecision) Step(rules []PodRule) Step {
	return Step{StartedAt: d.StartedAt, Rules: rules, PodDeadline: d.PodDeadline}
}

// Step is what one drain step needs to know about its drain beyond the Drainer's options: the
// caller's per-node settings. The zero Step drains every pod in one group, without a deadline.
type Step struct {
	// StartedAt is when draining the node began (NodeDecision.StartedAt), for Result.Elapsed;
	// zero when unknown.
	StartedAt time.Time
	// Rules say how pods are drained (see PodRule; the label Options.SkipLabelKey overrides them
	// for its pod). A rule with an unknown behaviour or a negative order fails the step.
	Rules []PodRule
	// PodDeadline, when not zero, is by when the pods that have to leave must be gone
	// (NodeDecision.PodDeadline): from PodDeadline minus its grace period on, a pod that still
	// holds the drain (blocked by a budget, waiting for its order group or to complete) is
	// deleted rather than evicted, so that it still gets its whole grace period.
	PodDeadline time.Time
}

// DecideNode is the drain policy for a node's drain as a whole. In order: while anything holds
// the drain it waits; then a reason to skip it skips it; then it gives up once Now has reached
// the deadline, StartedAt plus Timeout; otherwise it drains, starting now when it had not begun.
// So the timeout counts from the first step that may drain, never from earlier (a deletion, a
// wait for hooks), and without a timeout nothing but the drain's completion ends it. The pod
// deadline counts from the same start.
func DecideNode(r NodeRequest) NodeDecision {
	switch {
	case len(r.HeldBy) > 0:
		return NodeDecision{Action: NodeWait}
	case r.Skip != "":
		return NodeDecision{Action: NodeSkip}
	}
	d := NodeDecision{Action: NodeDrain, StartedAt: r.StartedAt}
	if d.StartedAt.IsZero() {
		d.StartedAt, d.Started = r.Now, true
	}
	if r.PodDeadline > 0 {
		d.PodDeadline = d.StartedAt.Add(r.PodDeadline)
	}
	if r.Timeout > 0 {
		d.Deadline = d.StartedAt.Add(r.Timeout)
		if !r.Now.Before(d.Deadline) {
			d.Action = NodeGiveUp
		}
	}
	return d
}

// Observation is what one drain step saw of a node: the input of DecidePods. Drain and Plan read
// it from the API server; a caller or a test may build one.
type Observation struct {
	// Node is the node being drained.
	Node *corev1.Node
	// Now is the time of the observation (from Options.Clock in Drain and Plan).
	Now time.Time
	// Pods are the pods bound to the node, each with what kubectl's drain filters decided about
	// it. Pods bound to another node are ignored.
	Pods []ObservedPod
	// PodDisruptionBudgets are the budgets of the namespaces of the pods the drain may evict.
	PodDisruptionBudgets []policyv1.PodDisruptionBudget
	// NamespaceLabels are the labels of the pods' namespaces, by name, read only when a rule of
	// the step selects pods by namespace labels.
	NamespaceLabels map[string]map[string]string
}

// ObservedPod is one pod of an Observation.
type ObservedPod struct {
	Pod corev1.Pod
	// Kubectl is what kubectl's drain filters decided about the pod.
	Kubectl KubectlVerdict
}

// KubectlVerdict is what kubectl's drain filters (k8s.io/kubectl/pkg/drain,
// Helper.GetPodsForDeletion, with this package's settings) decided about one pod. Pods with the
// skip label are hidden from kubectl, so it decides nothing about them.
type KubectlVerdict struct {
	// Evict is true when kubectl would evict the pod.
	Evict bool
	// Refusal, for a pod kubectl would not evict, is its reason for refusing to drain the node
	// at all because of the pod (e.g. emptyDir data without Options.DeleteEmptyDirData).
	Refusal string
	// Warning, for a pod kubectl leaves alone, is its message saying why (e.g. "ignoring
	// DaemonSet-managed Pods").
	Warning string
}

// PodAction is what the drain policy decides about one pod in one step.
type PodAction string

const (
	// PodSkip: the pod stays on the node and the drain does not wait for it.
	PodSkip PodAction = "Skip"
	// PodEvict: the step sends an eviction request for the pod.
	PodEvict PodAction = "Evict"
	// PodDelete: the step deletes the pod, with PodVerdict.GracePeriodSeconds, instead of
	// evicting it: no PodDisruptionBudget is consulted. Only past the pod deadline or on a node
	// unreachable for longer than Options.UnreachableDeleteAfter.
	PodDelete PodAction = "Delete"
	// PodWait: the pod has to leave, but the step does not evict it: it is already terminating,
	// or it is blocked (PodVerdict.Blocked says why).
	PodWait PodAction = "Wait"
)

// PodVerdict is the drain policy's decision about one pod of the node in one step.
type PodVerdict struct {
	Pod    types.NamespacedName
	Action PodAction
	// Reason completes "pod <namespace>/<name> ..." for a skipped, deleted or blocked pod; it is
	// empty for a pod evicted or already terminating.
	Reason string
	// Blocked, for PodWait, is why the pod cannot be evicted now; nil when it waits because it is
	// already terminating.
	Blocked *BlockedPod
	// Behavior is how the rules and the override label say the pod is drained (BehaviorDrain
	// when nothing says otherwise); pods kubectl's filters leave alone are skipped whatever it is.
	Behavior PodBehavior
	// Order is the pod's order group, for BehaviorDrain.
	Order int32
	// Rule names what decided Behavior and Order: a PodRule's Name, or "label <key>=<value>";
	// empty for the default.
	Rule string
	// GracePeriodSeconds, for PodDelete, is the grace period the deletion asks for.
	GracePeriodSeconds int64
	// DeleteAt, for a pod that waits, is when it will be deleted if it still holds the drain:
	// the pod deadline minus its grace period. Zero without a pod deadline.
	DeleteAt time.Time
	// PodDisruptionBudgets, for PodDelete, are the budgets that select the pod, which the
	// deletion does not consult.
	PodDisruptionBudgets []PodDisruptionBudgetRef
}

// DecidePods is the drain policy for the pods of one node in one step, with the Drainer's
// options and the step's rules and pod deadline. It makes no API call: Drain and Plan call it
// with what they observed, so a Plan lists what the next step does. It returns an error only for
// a rule it cannot use (an unknown behaviour or a negative order), naming the rule.
//
// Each pod's behaviour and order group come first (see PodRule; in order: the override label
// Options.SkipLabelKey with skip, wait-completed or order-<n>; then the most protective rule
// that selects it, Skip before WaitCompleted before Drain, the highest order among Drain rules,
// a tie to the first name; then Drain in group 0). The pods that have to leave by eviction are
// drained one order group at a time, lowest first: a group has finished when none of its pods
// is left on the node, terminating ones included. Then, for each pod sorted by namespace and
// name:
//
//   - a pod whose behaviour is Skip is skipped;
//   - a pod kubectl's filters would not evict is skipped with kubectl's reason (DaemonSet and
//     mirror pods), or waits, blocked, when kubectl refuses it (CauseDrainFilter; never deleted:
//     the refusal protects the pod's local data);
//   - a pod already terminating waits for it to go; on an unreachable node (Ready=Unknown or
//     Options.AssumeUnreachable) it is evicted again to shorten a long grace period, and skipped
//     once it is overdue by more than Options.UnreachableTerminatingTimeout;
//   - a WaitCompleted pod that has completed (Succeeded or Failed) is skipped; one still running
//     is never evicted: it waits (CauseWaitCompleted);
//   - on a node unreachable (Ready=Unknown) for longer than Options.UnreachableDeleteAfter, every
//     other pod that has to leave is deleted with UnreachableGracePeriodSeconds, whatever its
//     group or budget: it cannot be serving, so no budget may hold the drain forever;
//   - a Drain pod of a later order group waits (CauseDrainOrder);
//   - any other Drain pod is evicted if its PodDisruptionBudget allows it, as the Eviction API
//     would decide, each admitted pod spending one disruption; otherwise it waits, blocked
//     (CausePodDisruptionBudget);
//   - with a pod deadline, a pod that would wait (blocked by its budget, waiting for its group or
//     to complete) is deleted instead from the deadline minus its grace period on (the grace
//     period the eviction would ask for: Options.GracePeriodSeconds, else the pod's own), so that
//     it is gone by the deadline; until then its verdict says when (DeleteAt).
func (d *Drainer) DecidePods(step Step, obs Observation) (*Plan, error) {
	if err := validateRules(step.Rules); err != nil {
		return nil, err
	}
	return decidePods(d.opts, step, obs), nil
}

// stepContext is what decidePod needs to know besides the pod.
type stepContext struct {
	opts        Options
	step        Step
	now         time.Time
	unreachable bool
	// deleteAll: the node has been unreachable for longer than UnreachableDeleteAfter, since
	// unreachableSince.
	deleteAll        bool
	unreachableSince time.Time
	// grace is the grace period evictions ask for; nil for each pod's own.
	grace *int64
	// group is the order group being drained: the lowest of the pods that hold their group.
	group int32
	// groupLeft counts the pods of the group being drained.
	groupLeft int
	budget    *budgets
	pdbs      []policyv1.PodDisruptionBudget
}

func decidePods(o Options, step Step, obs Observation) *Plan {
	p := &Plan{
		Node:        obs.Node.Name,
		Cordoned:    obs.Node.Spec.Unschedulable,
		Unreachable: o.AssumeUnreachable || nodeUnreachable(obs.Node),
		PodDeadline: step.PodDeadline,
	}
	if o.GracePeriodSeconds != nil {
		p.GracePeriodSeconds = ptr.To(*o.GracePeriodSeconds)
	}
	if p.Unreachable {
		p.GracePeriodSeconds = ptr.To(UnreachableGracePeriodSeconds)
		if p.UnreachableSince = unreachableSince(obs.Node); !p.UnreachableSince.IsZero() {
			p.UnreachableDeleteAt = p.UnreachableSince.Add(o.UnreachableDeleteAfter)
			p.DeletingUnreachable = !obs.Now.Before(p.UnreachableDeleteAt)
		}
	}
	pods := make([]ObservedPod, 0, len(obs.Pods))
	for _, op := range obs.Pods {
		// A fake clientset ignores field selectors; a real API server never returns such a pod.
		if op.Pod.Spec.NodeName == obs.Node.Name {
			pods = append(pods, op)
		}
	}
	slices.SortFunc(pods, func(a, b ObservedPod) int { return compareKeys(keyOf(&a.Pod), keyOf(&b.Pod)) })

	sc := &stepContext{opts: o, step: step, now: obs.Now, unreachable: p.Unreachable, deleteAll: p.DeletingUnreachable,
		unreachableSince: p.UnreachableSince, grace: p.GracePeriodSeconds, budget: newBudgets(obs.PodDisruptionBudgets), pdbs: obs.PodDisruptionBudgets}
	treatments := make([]podTreatment, len(pods))
	first := true
	for i := range pods {
		treatments[i] = treatmentOf(o, step.Rules, &pods[i].Pod, obs.NamespaceLabels[pods[i].Pod.Namespace])
		if !sc.holdsGroup(&pods[i], treatments[i]) {
			continue
		}
		switch t := treatments[i].order; {
		case first || t < sc.group:
			sc.group, sc.groupLeft, first = t, 1, false
		case t == sc.group:
			sc.groupLeft++
		}
	}
	for i := range pods {
		v := sc.decidePod(&pods[i], treatments[i])
		p.add(v, pods[i].Pod)
		if !v.DeleteAt.IsZero() && (p.NextDeletion.IsZero() || v.DeleteAt.Before(p.NextDeletion)) {
			p.NextDeletion = v.DeleteAt
		}
	}
	if at := p.UnreachableDeleteAt; !at.IsZero() && !p.DeletingUnreachable && p.hasPodsToRemove() {
		if p.NextDeletion.IsZero() || at.Before(p.NextDeletion) {
			p.NextDeletion = at
		}
	}
	return p
}

// holdsGroup reports whether pod holds its order group back: it is drained by eviction and is
// still to leave (to be evicted, blocked, or terminating and waited for).
func (sc *stepContext) holdsGroup(op *ObservedPod, t podTreatment) bool {
	if t.behavior != BehaviorDrain || (!op.Kubectl.Evict && op.Kubectl.Refusal == "") {
		return false
	}
	act, _ := decideTerminating(&op.Pod, sc.now, sc.unreachable, sc.opts.UnreachableTerminatingTimeout)
	return act != stopWaiting
}

// decidePod is the verdict on one pod; sc.budget records the disruptions admitted pods spend.
func (sc *stepContext) decidePod(op *ObservedPod, t podTreatment) PodVerdict {
	pod := &op.Pod
	v := PodVerdict{Pod: keyOf(pod), Behavior: t.behavior, Order: t.order, Rule: t.source}
	if t.behavior == BehaviorSkip {
		v.Action, v.Reason = PodSkip, skipReason(sc.opts, pod, t)
		return v
	}
	if !op.Kubectl.Evict && op.Kubectl.Refusal == "" {
		return leftByKubectl(v, pod, op.Kubectl)
	}
	switch act, overdue := decideTerminating(pod, sc.now, sc.unreachable, sc.opts.UnreachableTerminatingTimeout); act {
	case shortenGracePeriod:
		if t.behavior == BehaviorDrain {
			v.Action = PodEvict
			return v
		}
		v.Action = PodWait
		return v
	case stopWaiting:
		v.Action = PodSkip
		v.Reason = fmt.Sprintf("terminating for %s past its deletion time on an unreachable node: not waited for", overdue.Round(time.Second))
		return v
	case waitForPod:
		v.Action = PodWait
		return v
	}
	if t.behavior == BehaviorWaitCompleted && podCompleted(pod) {
		v.Action = PodSkip
		v.Reason = fmt.Sprintf("completed (%s): not waited for (%s)", pod.Status.Phase, describeTreatment(t))
		return v
	}
	// A pod kubectl refuses is never deleted either: the refusal protects its local data.
	refused := op.Kubectl.Refusal != ""
	if refused && t.behavior == BehaviorDrain {
		v.Blocked = &BlockedPod{Pod: v.Pod, Cause: CauseDrainFilter, Reason: "not evicted: kubectl's drain filters refuse " + op.Kubectl.Refusal}
		v.Action, v.Reason = PodWait, v.Blocked.Reason
		return v
	}
	if sc.deleteAll && !refused {
		return sc.deleteVerdict(v, pod, fmt.Sprintf("deleted, not evicted: the node has been unreachable since %s, longer than %s, so the pod cannot be serving",
			formatTime(sc.unreachableSince), sc.opts.UnreachableDeleteAfter))
	}
	var blocked *BlockedPod
	switch {
	case t.behavior == BehaviorWaitCompleted:
		blocked = &BlockedPod{Pod: v.Pod, Cause: CauseWaitCompleted,
			Reason: fmt.Sprintf("not evicted: waits until it completes (%s)", describeTreatment(t))}
	case t.order != sc.group:
		blocked = &BlockedPod{Pod: v.Pod, Cause: CauseDrainOrder,
			Reason: fmt.Sprintf("waits for order group %d to finish first (%s left); its own group is %d (%s)", sc.group, pods(sc.groupLeft), t.order, describeTreatment(t))}
	default:
		blocked = sc.budget.admit(pod)
		if blocked == nil {
			v.Action = PodEvict
			return v
		}
	}
	grace := sc.deletionGrace(pod)
	if at := sc.deleteAt(grace); !at.IsZero() && !refused {
		if !sc.now.Before(at) {
			return sc.deleteVerdict(v, pod, fmt.Sprintf("deleted, not evicted, with its %ds grace period, to be gone by the pod deadline %s; until then it %s",
				grace, formatTime(sc.step.PodDeadline), untilThen(blocked.Reason)))
		}
		v.DeleteAt = at
		blocked.Reason += fmt.Sprintf("; deleted at %s unless gone before (pod deadline %s minus its %ds grace period)",
			formatTime(at), formatTime(sc.step.PodDeadline), grace)
	}
	v.Action, v.Reason, v.Blocked = PodWait, blocked.Reason, blocked
	return v
}

// deletionGrace is the grace period a deletion of pod asks for, and that the pod deadline leaves
// it: the one the evictions ask for (Options.GracePeriodSeconds, or UnreachableGracePeriodSeconds
// on an unreachable node), else the pod's terminationGracePeriodSeconds (30s when unset).
func (sc *stepContext) deletionGrace(pod *corev1.Pod) int64 {
	switch {
	case sc.grace != nil:
		return *sc.grace
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// deleteAt is when a pod with the grace period grace is deleted if it still holds the drain: the
// pod deadline minus grace; zero without a pod deadline.
func (sc *stepContext) deleteAt(grace int64) time.Time {
	if sc.step.PodDeadline.IsZero() {
		return time.Time{}
	}
	return sc.step.PodDeadline.Add(-time.Duration(grace) * time.Second)
}

// deleteVerdict turns v into a deletion of pod, naming the budgets it is deleted over.
func (sc *stepContext) deleteVerdict(v PodVerdict, pod *corev1.Pod, reason string) PodVerdict {
	v.Action, v.Reason, v.GracePeriodSeconds = PodDelete, reason, sc.deletionGrace(pod)
	for _, pdb := range matchingBudgets(sc.pdbs, pod) {
		v.PodDisruptionBudgets = append(v.PodDisruptionBudgets, refOf(pdb))
	}
	return v
}

// untilThen rephrases a blocked pod's reason to follow "until then it ...".
func untilThen(reason string) string {
	reason = strings.TrimPrefix(reason, "not evicted: ")
	if strings.HasPrefix(reason, "blocked ") {
		return "was " + reason
	}
	return reason
}

// skipReason says why a pod whose behaviour is Skip is skipped.
func skipReason(o Options, pod *corev1.Pod, t podTreatment) string {
	if t.byLabel {
		return fmt.Sprintf("has label %s=%s", o.SkipLabelKey, pod.Labels[o.SkipLabelKey])
	}
	return "skipped by " + t.source
}

// describeTreatment names where a pod's behaviour and order come from, for a reason.
func describeTreatment(t podTreatment) string {
	switch {
	case t.byLabel:
		return t.source
	case t.source != "":
		return fmt.Sprintf("%s by %s", t.behavior, t.source)
	}
	return "the default"
}

// leftByKubectl is the verdict on a pod kubectl's filters leave alone, with kubectl's reason.
func leftByKubectl(v PodVerdict, pod *corev1.Pod, k KubectlVerdict) PodVerdict {
	reason := "left alone by kubectl's drain filters"
	switch {
	case k.Warning != "":
		reason = k.Warning
	case pod.Annotations[corev1.MirrorPodAnnotationKey] != "":
		reason = "mirror pod: the kubelet runs it from a static manifest"
	}
	v.Action, v.Reason = PodSkip, reason
	return v
}

// add records a verdict in the plan's lists.
func (p *Plan) add(v PodVerdict, pod corev1.Pod) {
	p.Pods = append(p.Pods, v)
	switch {
	case v.Action == PodEvict:
		p.Evict = append(p.Evict, v.Pod)
		p.evict = append(p.evict, pod)
	case v.Action == PodDelete:
		p.Delete = append(p.Delete, DeletedPod{Pod: v.Pod, Reason: v.Reason, GracePeriodSeconds: v.GracePeriodSeconds, PodDisruptionBudgets: v.PodDisruptionBudgets})
		p.delete = append(p.delete, pod)
	case v.Action == PodWait && v.Blocked != nil:
		p.Blocked = append(p.Blocked, *v.Blocked)
	case v.Action == PodWait:
		p.Terminating = append(p.Terminating, v.Pod)
	case v.Action == PodSkip:
		p.Skipped = append(p.Skipped, SkippedPod{Pod: v.Pod, Reason: v.Reason})
	}
}

// hasPodsToRemove reports whether a pod still has to leave the node.
func (p *Plan) hasPodsToRemove() bool {
	return len(p.Evict)+len(p.Delete)+len(p.Terminating)+len(p.Blocked) > 0
}

// podCompleted reports whether the pod has run to completion (Succeeded or Failed).
func podCompleted(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// formatTime writes a time for a message: UTC, to the second.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// terminatingAction is what a step does with a pod kubectl would evict, given whether it is already
// terminating.
type terminatingAction int

const (
	// evictPod: the pod is not terminating; evict it if its budget allows.
	evictPod terminatingAction = iota
	// waitForPod: the pod is terminating; wait for it to go.
	waitForPod
	// shortenGracePeriod: unreachable node, the pod is terminating with a longer grace period than
	// UnreachableGracePeriodSeconds; evict it again with the short one, so that stopWaiting comes
	// soon instead of after the pod's own grace period.
	shortenGracePeriod
	// stopWaiting: unreachable node, the pod has been terminating past its deletion time for longer
	// than the timeout; no kubelet will finish it, so the drain does not wait for it.
	stopWaiting
)

// decideTerminating returns what to do with pod at now, and for how long it has been terminating
// past its deletion timestamp (the time its grace period ended).
func decideTerminating(pod *corev1.Pod, now time.Time, unreachable bool, timeout time.Duration) (terminatingAction, time.Duration) {
	if pod.DeletionTimestamp == nil {
		return evictPod, 0
	}
	overdue := now.Sub(pod.DeletionTimestamp.Time)
	if !unreachable {
		return waitForPod, overdue
	}
	if overdue > timeout {
		return stopWaiting, overdue
	}
	grace := pod.DeletionGracePeriodSeconds
	if (grace == nil || *grace > UnreachableGracePeriodSeconds) &&
		pod.DeletionTimestamp.After(now.Add(time.Duration(UnreachableGracePeriodSeconds)*time.Second)) {
		return shortenGracePeriod, overdue
	}
	return waitForPod, overdue
}

// unreachableSince is when the node's Ready condition turned Unknown, zero when it is not Unknown
// or the time is not recorded.
func unreachableSince(node *corev1.Node) time.Time {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// nodeUnreachable reports whether the node controller has lost contact with the node's kubelet:
// its Ready condition is Unknown.
func nodeUnreachable(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}
