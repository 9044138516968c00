package nodelink

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordStatus writes the node reference and the NodeLinked condition with one status write:
// a server-side apply of those fields alone when the adapter is a LinkApplier, otherwise a JSON
// merge patch computed from the machine as read, with its resourceVersion as precondition, so
// that every status field and condition another controller wrote is carried over (see doc.go).
// Nothing is written when nothing changed. An event is emitted when the reason changes to one a
// user must act on.
func (r *reconciler[M]) recordStatus(ctx context.Context, s *scope[M]) error {
	before := s.machine.DeepCopyObject().(M)
	ref, cond, prev := r.want(s)
	r.setStatus(s.machine, ref, cond)
	if equality.Semantic.DeepEqual(before, s.machine) {
		return nil
	}
	var err error
	applier, applies := r.adapter.(LinkApplier[M])
	if applies {
		s.machine, err = r.applyStatus(ctx, applier, before, ref, cond)
	} else {
		err = r.patchStatus(ctx, s, before, ref, cond)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: its deletion event releases the Node
		}
		return fmt.Errorf("recording %s=%s (%s) on machine %s: %w", ConditionNodeLinked, cond.Status, cond.Reason, s.view.Key, err)
	}
	// The answer is the object as stored. If setting the same status again would change it, the
	// CRD's status schema pruned what was written (field paths that do not match the schema), and
	// every later reconcile would write it again: fail for good instead.
	again := s.machine.DeepCopyObject().(M)
	r.setStatus(again, ref, cond)
	if !equality.Semantic.DeepEqual(again, s.machine) {
		return reconcile.TerminalError(fmt.Errorf("machine %s: the API server did not keep the node reference or %s condition nodelink wrote: "+
			"check that the CRD's status schema has the fields the adapter writes", s.view.Key, ConditionNodeLinked))
	}
	observeDecision(s.decision, reasonOf(prev))
	if t := r.eventType(s, prev); t != "" {
		r.recorder.Eventf(s.machine, nil, t, cond.Reason, "LinkNode", cond.Message)
	}
	return nil
}

// want returns what to record for s's decision: the node reference (nil while the machine has
// none), the NodeLinked condition, and the condition recorded until now (nil when none).
func (r *reconciler[M]) want(s *scope[M]) (*NodeRef, metav1.Condition, *metav1.Condition) {
	var prev *metav1.Condition
	if c := r.adapter.LinkCondition(s.machine); c != nil {
		cp := *c
		prev = &cp
	}
	cond := linkCondition(s.decision, prev, s.machine.GetGeneration(), metav1.NewTime(r.opts.Clock.Now()))
	return nodeRefFor(s.decision, s.view.NodeRef), cond, prev
}

// eventType returns the type of the event due once s's decision is recorded over prev, "" for
// none.
func (r *reconciler[M]) eventType(s *scope[M], prev *metav1.Condition) string {
	// A machine being deleted loses its Node on purpose (its controller deletes it): no warning.
	if s.decision.Reason == ReasonNodeDeleted && !s.machine.GetDeletionTimestamp().IsZero() {
		return ""
	}
	return eventFor(s.decision, reasonOf(prev))
}

// reasonOf returns the reason of c, "" for no condition.
func reasonOf(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Reason
}

// patchStatus writes s.machine's status, changed from before, with a merge patch guarded by
// before's resourceVersion.
func (r *reconciler[M]) patchStatus(ctx context.Context, s *scope[M], before M, ref *NodeRef, cond metav1.Condition) error {
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	err := r.machineClient.Status().Patch(ctx, s.machine, patch)
	if apierrors.IsConflict(err) {
		// Another controller wrote the machine's status since the cache showed it, and a watch
		// event for a change nodelink does not look at would not bring the machine back: write
		// once more on top of the machine as the API server has it now.
		return r.rewriteOnFresh(ctx, s, ref, cond)
	}
	return err
}

// applyStatus writes ref and cond with a server-side apply under the linker's field manager,
// forcing ownership (a machine linked before by a merge patch hands the fields over), and returns
// the machine as the API server stored it.
func (r *reconciler[M]) applyStatus(ctx context.Context, applier LinkApplier[M], m M, ref *NodeRef, cond metav1.Condition) (M, error) {
	ac := applier.LinkApplyConfiguration(m, ref, cond)
	stored := r.adapter.New()
	if err := r.machineClient.Status().Apply(ctx, ac, client.FieldOwner(r.opts.Name), client.ForceOwnership); err != nil {
		return stored, err
	}
	// The client decoded the API server's answer, the whole object, into ac.
	data, err := json.Marshal(ac)
	if err == nil {
		err = json.Unmarshal(data, stored)
	}
	if err != nil {
		return stored, fmt.Errorf("reading the answer to the status apply of machine %s: %w", client.ObjectKeyFromObject(m), err)
	}
	return stored, nil
}

// rewriteOnFresh reads the machine from the API server (not the cache), records ref and cond on it
// and patches it with that resourceVersion as precondition.
func (r *reconciler[M]) rewriteOnFresh(ctx context.Context, s *scope[M], ref *NodeRef, cond metav1.Condition) error {
	fresh := r.adapter.New()
	if err := r.machines.GetAPIReader().Get(ctx, s.view.Key, fresh); err != nil {
		return err
	}
	before := fresh.DeepCopyObject().(M)
	r.setStatus(fresh, ref, cond)
	s.machine = fresh
	if equality.Semantic.DeepEqual(before, fresh) {
		return nil
	}
	return r.machineClient.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// setStatus records ref (when not nil) and cond on m through the adapter.
func (r *reconciler[M]) setStatus(m M, ref *NodeRef, cond metav1.Condition) {
	if ref != nil {
		r.adapter.SetNodeRef(m, *ref)
	}
	r.adapter.SetLinkCondition(m, cond)
}
