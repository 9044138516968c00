package drain

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ErrNodeNotFound is wrapped by the errors of Drain, Plan and Uncordon when the Node does not
// exist. A caller that drains before deleting a machine can treat it as "nothing left to drain".
var ErrNodeNotFound = errors.New("node not found")

// Cause says, in one CamelCase word fit for a condition Reason, why a pod has not been evicted.
type Cause string

const (
	// CausePodDisruptionBudget: evicting the pod now would violate a PodDisruptionBudget, or the
	// Eviction API refuses it because of one (several budgets, status not yet observed).
	CausePodDisruptionBudget Cause = "PodDisruptionBudget"
	// CauseDrainFilter: kubectl's drain filters refuse the pod, e.g. it uses emptyDir data and
	// Options.DeleteEmptyDirData is off.
	CauseDrainFilter Cause = "DrainFilter"
	// CauseEvictionError: the eviction request failed for another reason (RBAC, throttling, a
	// terminating namespace, ...); the next step retries.
	CauseEvictionError Cause = "EvictionError"
	// CauseStepDeadline: the step's deadline (Options.StepTimeout) came before the eviction request
	// was sent or answered; the next step retries.
	CauseStepDeadline Cause = "StepDeadline"
	// CauseWaitCompleted: the pod's behaviour is WaitCompleted: it is never evicted, and the drain
	// waits until it has completed or is gone.
	CauseWaitCompleted Cause = "WaitCompleted"
	// CauseDrainOrder: the pod's order group comes after one whose pods are not all gone yet.
	CauseDrainOrder Cause = "DrainOrder"
)

// PodDisruptionBudgetRef names a PodDisruptionBudget and what its status allowed when it was read.
type PodDisruptionBudgetRef struct {
	types.NamespacedName
	// DisruptionsAllowed is the budget's status.disruptionsAllowed.
	DisruptionsAllowed int32
}

// BlockedPod is a pod that has to leave the node but cannot be evicted now.
type BlockedPod struct {
	Pod   types.NamespacedName
	Cause Cause
	// Reason completes the sentence "pod <namespace>/<name> ...", e.g. "blocked by
	// PodDisruptionBudget default/web (allows 0 disruptions)".
	Reason string
	// PodDisruptionBudgets are the budgets that select the pod, when Cause is CausePodDisruptionBudget.
	PodDisruptionBudgets []PodDisruptionBudgetRef
}

// DeletedPod is a pod a step deletes instead of evicting it: past the pod deadline, or on a node
// unreachable for longer than Options.UnreachableDeleteAfter. No PodDisruptionBudget is consulted.
type DeletedPod struct {
	Pod types.NamespacedName
	// Reason completes the sentence "pod <namespace>/<name> ...", e.g. "deleted, not evicted,
	// with its 30s grace period, to be gone by the pod deadline 2026-01-01T12:00:00Z; until then
	// it was blocked by PodDisruptionBudget default/web (allows 0 disruptions)".
	Reason string
	// GracePeriodSeconds is the grace period the deletion asks for.
	GracePeriodSeconds int64
	// PodDisruptionBudgets are the budgets that select the pod: it is deleted over them.
	PodDisruptionBudgets []PodDisruptionBudgetRef
}

// SkippedPod is a pod the drain leaves on the node and does not wait for.
type SkippedPod struct {
	Pod types.NamespacedName
	// Reason says why, e.g. "mirror pod: the kubelet manages it".
	Reason string
}

// Plan is what one drain step would do to a node right now. Drain computes the same Plan and then
// carries it out, so a Plan taken just before a step lists exactly what the step does.
type Plan struct {
	// Node is the node's name.
	Node string
	// Cordoned is true when the node is already unschedulable; otherwise the step cordons it first.
	Cordoned bool
	// Unreachable is true in unreachable-node mode: the node's Ready condition is Unknown, or
	// Options.AssumeUnreachable is set.
	Unreachable bool
	// UnreachableSince, on an unreachable node, is when its Ready condition turned Unknown (zero
	// when not known, e.g. with Options.AssumeUnreachable on a Ready node).
	UnreachableSince time.Time
	// UnreachableDeleteAt, when UnreachableSince is known, is UnreachableSince plus
	// Options.UnreachableDeleteAfter: from then on the pods that have to leave are deleted.
	UnreachableDeleteAt time.Time
	// DeletingUnreachable is true once the node has been unreachable for longer than
	// Options.UnreachableDeleteAfter: the pods that have to leave are deleted, not evicted.
	DeletingUnreachable bool
	// PodDeadline is the step's Step.PodDeadline: pods still holding the drain are deleted its
	// grace period before it.
	PodDeadline time.Time
	// NextDeletion is when the next pod that now waits will be deleted if it still holds the
	// drain (the earliest PodVerdict.DeleteAt, or the end of the unreachable bound); zero when
	// none will. A caller polls again by then.
	NextDeletion time.Time
	// GracePeriodSeconds is the grace period the evictions ask for; nil means each pod's own.
	GracePeriodSeconds *int64
	// Evict lists the pods the step evicts, sorted by namespace and name.
	Evict []types.NamespacedName
	// Delete lists the pods the step deletes instead of evicting them, sorted by namespace and
	// name.
	Delete []DeletedPod
	// Terminating lists pods that are already terminating: the drain waits for them to go and does
	// not evict them again.
	Terminating []types.NamespacedName
	// Blocked lists the pods that have to leave but cannot be evicted now, with why.
	Blocked []BlockedPod
	// Skipped lists the pods the drain leaves on the node, with why.
	Skipped []SkippedPod
	// Pods is the drain policy's verdict on every pod of the node (DecidePods), sorted by
	// namespace and name; Evict, Delete, Terminating, Blocked and Skipped group the same verdicts.
	Pods []PodVerdict

	// evict and delete hold the pods in Evict and Delete, in the same order.
	evict, delete []corev1.Pod
}

// Result is what one drain step did and what is left.
type Result struct {
	// Node is the node's name.
	Node string
	// Done is true when no pod has to leave the node any more: the node is drained.
	Done bool
	// Cordoned is true when this step cordoned the node.
	Cordoned bool
	// Unreachable is true when the step ran in unreachable-node mode.
	Unreachable bool
	// UnreachableSince, UnreachableDeleteAt and DeletingUnreachable are the plan's: since when
	// the node has been unreachable, from when and whether its pods are deleted rather than
	// evicted.
	UnreachableSince    time.Time
	UnreachableDeleteAt time.Time
	DeletingUnreachable bool
	// NextDeletion is the plan's: when the next pod still holding the drain will be deleted.
	NextDeletion time.Time
	// PodDeadline is the step's Step.PodDeadline.
	PodDeadline time.Time
	// Evicted lists the pods whose eviction the API server accepted in this step. They are
	// terminating and still count in Remaining until they are gone.
	Evicted []types.NamespacedName
	// Deleted lists the pods whose deletion the API server accepted in this step (instead of
	// an eviction), with why and over which budgets. They are terminating and still count in
	// Remaining until they are gone.
	Deleted []DeletedPod
	// Remaining lists the pods that still have to leave the node: evicted but not yet gone,
	// terminating, or blocked.
	Remaining []types.NamespacedName
	// Terminating lists the pods that were already terminating when the step began.
	Terminating []types.NamespacedName
	// Blocked lists the pods that could not be evicted in this step, with why.
	Blocked []BlockedPod
	// Skipped lists the pods the drain leaves on the node, with why.
	Skipped []SkippedPod
	// Elapsed is how long draining has run: the time since the startedAt passed to Drain, or 0
	// when it was zero.
	Elapsed time.Duration
}

// maxBlockedInSummary caps how many blocked pods Summary names, so that a condition message stays
// short on a node with hundreds of pods.
const maxBlockedInSummary = 3

// Summary returns one line for a condition message or an event, e.g.
// "draining node n1: 3 pods remaining; pod default/web-0 blocked by PodDisruptionBudget default/web (allows 0 disruptions)".
func (r *Result) Summary() string {
	var b strings.Builder
	node := "node " + r.Node
	if r.Unreachable {
		node = "unreachable " + node
	}
	if r.Done {
		fmt.Fprintf(&b, "drained %s", node)
		if r.Elapsed > 0 {
			fmt.Fprintf(&b, " in %s", r.Elapsed.Round(time.Second))
		}
		if n := len(r.Skipped); n > 0 {
			fmt.Fprintf(&b, "; %s left in place", pods(n))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "draining %s", node)
	if r.Elapsed > 0 {
		fmt.Fprintf(&b, " for %s", r.Elapsed.Round(time.Second))
	}
	switch {
	case r.DeletingUnreachable:
		fmt.Fprintf(&b, " (unreachable since %s: its pods are deleted, not evicted)", formatTime(r.UnreachableSince))
	case !r.UnreachableDeleteAt.IsZero():
		fmt.Fprintf(&b, " (unreachable since %s: its pods are deleted from %s on)", formatTime(r.UnreachableSince), formatTime(r.UnreachableDeleteAt))
	}
	fmt.Fprintf(&b, ": %s remaining", pods(len(r.Remaining)))
	var did []string
	if n := len(r.Evicted); n > 0 {
		did = append(did, fmt.Sprintf("%d evicted", n))
	}
	if n := len(r.Deleted); n > 0 {
		did = append(did, fmt.Sprintf("%d deleted", n))
	}
	if len(did) > 0 {
		fmt.Fprintf(&b, " (%s in this step)", strings.Join(did, ", "))
	}
	for i, p := range r.Blocked {
		if i == maxBlockedInSummary {
			fmt.Fprintf(&b, "; %d more blocked", len(r.Blocked)-maxBlockedInSummary)
			break
		}
		fmt.Fprintf(&b, "; pod %s %s", p.Pod, p.Reason)
	}
	return b.String()
}

// DeletionSummary returns one line naming every pod the step deleted instead of evicting, with
// why and the budgets it was deleted over, for a Warning event; "" when it deleted none. E.g.
// "deleted 1 pod of node n1 instead of evicting it: default/web-0 (grace period 30s, over
// PodDisruptionBudget default/web allowing 0 disruptions): deleted, not evicted, ...".
func (r *Result) DeletionSummary() string {
	if len(r.Deleted) == 0 {
		return ""
	}
	parts := make([]string, 0, len(r.Deleted))
	for _, d := range r.Deleted {
		about := fmt.Sprintf("grace period %ds", d.GracePeriodSeconds)
		for _, pdb := range d.PodDisruptionBudgets {
			about += fmt.Sprintf(", over PodDisruptionBudget %s allowing %s", pdb.NamespacedName, disruptions(pdb.DisruptionsAllowed))
		}
		parts = append(parts, fmt.Sprintf("%s (%s): %s", d.Pod, about, d.Reason))
	}
	verb := "them"
	if len(r.Deleted) == 1 {
		verb = "it"
	}
	return fmt.Sprintf("deleted %s of node %s instead of evicting %s: %s", pods(len(r.Deleted)), r.Node, verb, strings.Join(parts, "; "))
}

func pods(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
