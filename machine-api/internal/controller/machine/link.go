package machine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink"
)

var _ nodelink.LinkRecorder = &Reconciler{}

// link decides the Machine's link with the node linker of this process, for the Machines it
// handles: nodelink.Linker.Link claims the Node (with the optimistic lock that keeps two Machines
// from linking one Node) and returns what to record, and computeStatus records it with the rest of
// the status, so a Machine linked to a Node that is Ready becomes Running in the same write. This
// controller is then the only writer of status.nodeRef and NodeLinked on those Machines: every
// status write of theirs carries the two as last recorded (statusApply). It never waits; an error
// (a Node write that failed) stops this reconcile's steps and is retried with backoff.
func (r *Reconciler) link(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if r.Linker == nil || !r.Linker.Handles(s.machine) {
		return reconcile.Result{}, true, nil
	}
	s.recordsLink = true
	l, err := r.Linker.Link(ctx, s.machine)
	if err != nil {
		return reconcile.Result{}, false, fmt.Errorf("linking machine %s to its Node: %w", client.ObjectKeyFromObject(s.machine), err)
	}
	s.link = l
	return reconcile.Result{}, true, nil
}

// LinkChanged implements nodelink.LinkRecorder: the node linker decided a link the Machine does
// not record yet, and the Machine is queued, ahead of new Machines (progressPriority). A call
// before the controller runs is dropped: its start queues every Machine anyway.
func (r *Reconciler) LinkChanged(key types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		addWithPriority(*q, key, progressPriority)
	}
}
