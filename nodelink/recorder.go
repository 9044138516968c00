package nodelink

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LinkRecorder records the links of a linker's machines instead of the linker (Options.Recorder):
// a controller that writes the status of the same machines, in the same process, records
// status.nodeRef and the NodeLinked condition in its own status write, so that a link and what it
// lets that controller conclude (machine-api's machine controller: the Machine is Running once
// linked to a Ready Node) cost one write instead of two.
//
// With a Recorder, the linker's reconcile of a machine it handles (Linker.Handles) decides as
// always but writes nothing: when the link it decides differs from what the machine records, or
// the linked Node's metadata is out of date, it calls LinkChanged. The recorder's next reconcile
// of that machine calls Linker.Link, which decides again and writes the Node side — claiming the
// Node, with the optimistic lock that keeps two machines from linking it, before returning it as
// the machine's; keeping its metadata in sync — and writes what Link returned in its status write,
// then calls Linker.Recorded. So each machine's writes are made by one reconcile at a time, and
// none is refused because the linker and the recorder raced for the same Node. The linker still
// releases the Nodes of deleted machines itself. The recorder is the only writer of the two
// fields on those machines: every status write it makes carries them as last recorded (with
// server-side apply, a field its manager owns and leaves out is removed).
type LinkRecorder interface {
	// LinkChanged asks for the machine key to be reconciled soon: the link it records is out of
	// date. It is called from the linker's reconciles and must not block.
	LinkChanged(key types.NamespacedName)
}

// Link is what a LinkRecorder records on a machine.
type Link struct {
	// NodeRef is the node reference to record; nil while the machine has none (it was never
	// linked).
	NodeRef *NodeRef
	// Condition is the NodeLinked condition to record, in place of the machine's.
	Condition metav1.Condition
	// event is the type of the event due once the link is recorded, "" for none.
	event string
	// decision and prevReason are counted in the linker's metrics once the link is recorded.
	decision   decision
	prevReason string
}

// Handles reports whether m is in the linker's scope (Options.Namespace and Options.Selector):
// with a LinkRecorder, the machines whose links the recorder records.
func (l *Linker[M]) Handles(m client.Object) bool { return l.r.handles(m) }

// Link decides the link of machine m as the linker's own reconcile does and writes the Node side
// (the Node is claimed for m before it is returned as m's). It returns the link to record on m,
// or nil when there is nothing to record now: m is out of the linker's scope or paused, has
// nothing a Node could be matched by yet, or its Node changed since the cache showed it (that
// change brings m back through LinkChanged). m is the machine as the recorder last wrote it (or
// newer); Link does not modify it.
func (l *Linker[M]) Link(ctx context.Context, m M) (*Link, error) {
	r := l.r
	if !r.handles(m) || r.opts.Paused != nil && r.opts.Paused(m) {
		return nil, nil
	}
	s := &scope[M]{machine: m, view: r.machineView(m)}
	if unmatchable(s.view) && r.adapter.LinkCondition(m) == nil {
		return nil, nil
	}
	if err := r.decide(ctx, s); err != nil {
		return nil, err
	}
	if err := r.syncNode(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			if r.nodeConflict(ctx, s) {
				r.opts.Recorder.LinkChanged(s.view.Key)
			}
			return nil, nil
		}
		return nil, err
	}
	ref, cond, prev := r.want(s)
	return &Link{NodeRef: ref, Condition: cond, event: r.eventType(s, prev), decision: s.decision, prevReason: reasonOf(prev)}, nil
}

// Recorded counts link in the linker's metrics and emits the event due for it, which the recorder
// has just written on m: a Warning for a link a user must act on (see the reasons), as the linker
// does after its own writes.
func (l *Linker[M]) Recorded(m M, link *Link) {
	if link == nil {
		return
	}
	observeDecision(link.decision, link.prevReason)
	if link.event != "" {
		l.r.recorder.Eventf(m, nil, link.event, link.Condition.Reason, "LinkNode", link.Condition.Message)
	}
}

// handOver tells the recorder when the link decided in s differs from what s.machine records, or
// the linked Node's metadata is out of date.
func (r *reconciler[M]) handOver(s *scope[M]) {
	if s.node != nil && !equality.Semantic.DeepEqual(metaOf(s.node), r.nodeWant(s)) {
		r.opts.Recorder.LinkChanged(s.view.Key)
		return
	}
	ref, cond, _ := r.want(s)
	decided := s.machine.DeepCopyObject().(M)
	r.setStatus(decided, ref, cond)
	if !equality.Semantic.DeepEqual(decided, s.machine) {
		r.opts.Recorder.LinkChanged(s.view.Key)
	}
}
