/*
Copyright The machineapi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package nodelink

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordStatus writes the node reference and the NodeLinked condition with one status patch:
// a JSON merge patch computed from the machine as read, with its resourceVersion as
// precondition, so that every status field and condition another controller wrote is carried
// over (see doc.go). Nothing is written when nothing changed. An event is emitted when the
// reason changes to one a user must act on.
func (r *reconciler[M]) recordStatus(ctx context.Context, s *scope[M]) error {
	before := s.machine.DeepCopyObject().(M)
	var prev *metav1.Condition
	if c := r.adapter.LinkCondition(s.machine); c != nil {
		cp := *c
		prev = &cp
	}
	cond := linkCondition(s.decision, prev, s.machine.GetGeneration(), metav1.NewTime(r.opts.Clock.Now()))
	ref := nodeRefFor(s.decision, s.view.NodeRef)
	r.setStatus(s.machine, ref, cond)
	if equality.Semantic.DeepEqual(before, s.machine) {
		return nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	err := r.machines.GetClient().Status().Patch(ctx, s.machine, patch)
	if apierrors.IsConflict(err) {
		// Another controller wrote the machine's status since the cache showed it, and a watch
		// event for a change nodelink does not look at would not bring the machine back: write
		// once more on top of the machine as the API server has it now.
		before, err = r.rewriteOnFresh(ctx, s, ref, cond)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: its deletion event releases the Node
		}
		return fmt.Errorf("recording %s=%s (%s) on machine %s: %w", ConditionNodeLinked, cond.Status, cond.Reason, s.view.Key, err)
	}
	r.remember(ctx, r.machines.GetCache(), before.GetResourceVersion(), s.machine, r.adapter.New())
	// The answer is the object as stored. If setting the same status again would change it, the
	// CRD's status schema pruned what was written (field paths that do not match the schema), and
	// every later reconcile would write it again: fail for good instead.
	again := s.machine.DeepCopyObject().(M)
	r.setStatus(again, ref, cond)
	if !equality.Semantic.DeepEqual(again, s.machine) {
		return reconcile.TerminalError(fmt.Errorf("machine %s: the API server did not keep the node reference or %s condition nodelink wrote: "+
			"check that the CRD's status schema has the fields the adapter writes", s.view.Key, ConditionNodeLinked))
	}
	prevReason := ""
	if prev != nil {
		prevReason = prev.Reason
	}
	// A machine being deleted loses its Node on purpose (its controller deletes it): no warning.
	expected := s.decision.Reason == ReasonNodeDeleted && !s.machine.GetDeletionTimestamp().IsZero()
	if t := eventFor(s.decision, prevReason); t != "" && !expected {
		r.recorder.Eventf(s.machine, nil, t, cond.Reason, "LinkNode", cond.Message)
	}
	return nil
}

// setStatus records ref (when not nil) and cond on m through the adapter.
// rewriteOnFresh reads the machine from the API server (not the cache), records ref and cond on it
// and patches it with that resourceVersion as precondition. It returns the machine as read.
func (r *reconciler[M]) rewriteOnFresh(ctx context.Context, s *scope[M], ref *NodeRef, cond metav1.Condition) (M, error) {
	fresh := r.adapter.New()
	if err := r.machines.GetAPIReader().Get(ctx, s.view.Key, fresh); err != nil {
		return fresh, err
	}
	before := fresh.DeepCopyObject().(M)
	r.setStatus(fresh, ref, cond)
	s.machine = fresh
	if equality.Semantic.DeepEqual(before, fresh) {
		return before, nil
	}
	return before, r.machines.GetClient().Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

func (r *reconciler[M]) setStatus(m M, ref *NodeRef, cond metav1.Condition) {
	if ref != nil {
		r.adapter.SetNodeRef(m, *ref)
	}
	r.adapter.SetLinkCondition(m, cond)
}
