package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/machinedrain"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// reconcileDelete runs the delete pipeline: each step either is done or says what it waits for,
// and the first one still waiting stops the rest.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !hasFinalizer(s.machine) {
		s.finalizerRemoved = true // nothing of ours to clean up
		return reconcile.Result{}, nil
	}
	s.deletion = &deletionState{}
	return steps.Pipeline(ctx, s,
		r.link,
		r.observeNode,
		r.waitForPreDrainHooks,
		r.drainNode,
		r.waitForVolumeDetach,
		r.waitForPreTerminateHooks,
		r.deleteInstance,
		r.deleteNode,
		r.removeFinalizer,
	)
}

func (r *Reconciler) waitForPreDrainHooks(_ context.Context, s *scope) (reconcile.Result, bool, error) {
	return waitForHooks(s, s.machine.Spec.LifecycleHooks.PreDrain, ReasonWaitingForPreDrainHooks, "pre-drain")
}

func (r *Reconciler) waitForPreTerminateHooks(_ context.Context, s *scope) (reconcile.Result, bool, error) {
	return waitForHooks(s, s.machine.Spec.LifecycleHooks.PreTerminate, ReasonWaitingForPreTerminateHooks, "pre-terminate")
}

// waitForHooks holds deletion while hooks remain; their owners' removal of a hook brings the
// Machine back, so there is no timed requeue.
func waitForHooks(s *scope, hooks []v1beta1.LifecycleHook, reason, stage string) (reconcile.Result, bool, error) {
	if len(hooks) == 0 {
		return reconcile.Result{}, true, nil
	}
	names := make([]string, 0, len(hooks))
	for _, h := range hooks {
		names = append(names, fmt.Sprintf("%s (owner %s)", h.Name, h.Owner))
	}
	s.deletion.step = reason
	s.deletion.message = fmt.Sprintf("waiting for %s hooks to be removed by their owners: %s", stage, strings.Join(names, ", "))
	return reconcile.Result{}, false, nil
}

// drainNode cordons and drains the Node one step at a time, as the drain policy decides
// (drain.DecideNode, asked through machinedrain like cluster-manager's remote drain): unless
// draining is excluded, there is no Node here, or nodeDrainTimeoutSeconds has passed since
// draining began (status.deletion.nodeDrainStartTime). Each step applies the MachineDrainRules
// of the Machine's namespace that select it and the pod deadline (drainDeadlineSeconds); a step
// that deletes pods instead of evicting them says so in a Warning event naming each pod.
func (r *Reconciler) drainNode(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	skip := func(why string) (reconcile.Result, bool, error) {
		s.deletion.drain = &drainState{done: true, reason: ReasonDrainSkipped, message: why}
		return reconcile.Result{}, true, nil
	}
	req := machinedrain.LocalRequest(m, s.now)
	if req.Skip == "" {
		req.Skip = nodeOutOfReach(s)
	}
	d := drain.DecideNode(req)
	switch d.Action {
	case drain.NodeWait: // waitForPreDrainHooks waited already; were it ever skipped, this waits the same way
		return waitForHooks(s, m.Spec.LifecycleHooks.PreDrain, ReasonWaitingForPreDrainHooks, "pre-drain")
	case drain.NodeSkip:
		return skip(req.Skip)
	}
	if c := drainedCondition(m); c != nil && c.Status == metav1.ConditionTrue {
		return reconcile.Result{}, true, nil // drained in an earlier reconcile
	}

	start := d.StartedAt
	if d.Started {
		s.drainStart = &start
	}
	if d.Action == drain.NodeGiveUp {
		msg := fmt.Sprintf("draining Node %s gave up after nodeDrainTimeoutSeconds (%s); deletion goes on", s.node.Name, req.Timeout)
		s.deletion.drain = &drainState{done: true, reason: ReasonDrainTimeout, message: msg}
		r.Recorder.Eventf(m, nil, "Warning", ReasonDrainTimeout, "Drain", msg)
		drainDuration.WithLabelValues("timeout").Observe(s.now.Sub(start).Seconds())
		return reconcile.Result{}, true, nil
	}

	s.deletion.step = ReasonDrainingNode
	rules, err := machinedrain.ReadRules(ctx, r.Client, m)
	if err != nil {
		// A rule left out could evict pods it protects: wait until it is fixed (a rule's change
		// brings the Machine back).
		msg := fmt.Sprintf("cannot drain Node %s: %v; fix or delete the rule", s.node.Name, err)
		s.deletion.message = msg
		s.deletion.drain = &drainState{reason: ReasonDraining, message: msg, blockedBy: []string{HoldMachineDrainRule}}
		log.FromContext(ctx).Info("not draining: a MachineDrainRule cannot be used", "machine", client.ObjectKeyFromObject(m), "error", err.Error())
		return reconcile.Result{}, false, nil
	}
	res, err := r.Drainer.Drain(ctx, s.node.Name, d.Step(rules))
	if errors.Is(err, drain.ErrNodeNotFound) {
		return skip(fmt.Sprintf("draining skipped: Node %s no longer exists", s.node.Name))
	}
	if err != nil {
		s.deletion.message = fmt.Sprintf("draining Node %s failed, retrying: %v", s.node.Name, err)
		return reconcile.Result{}, false, err
	}
	if deleted := res.DeletionSummary(); deleted != "" {
		log.FromContext(ctx).Info("deleted pods instead of evicting them", "machine", client.ObjectKeyFromObject(m), "summary", deleted)
		r.Recorder.Eventf(m, nil, "Warning", EventPodsDeleted, "Drain", "%s", deleted)
	}
	if !res.Done {
		s.deletion.message = res.Summary()
		s.deletion.drain = &drainState{reason: ReasonDraining, message: res.Summary(), result: res, blockedBy: blockedCauses(res)}
		return reconcile.Result{RequeueAfter: pollUntil(drainPoll, res.NextDeletion, s.now)}, false, nil
	}
	msg := fmt.Sprintf("Node %s drained in %s", s.node.Name, s.now.Sub(start).Round(time.Second))
	s.deletion.drain = &drainState{done: true, reason: ReasonDrained, message: msg, result: res}
	drainDuration.WithLabelValues("drained").Observe(s.now.Sub(start).Seconds())
	return reconcile.Result{}, true, nil
}

// pollUntil is poll, or less when at (not zero) comes sooner: the time a step must run by.
func pollUntil(poll time.Duration, at, now time.Time) time.Duration {
	if !at.IsZero() && at.Sub(now) < poll {
		return max(at.Sub(now), time.Second)
	}
	return poll
}

// waitForVolumeDetach waits until the volumes the drain freed have detached from the Node, as the
// drain policy scopes the wait (drain.Drainer.Volumes: not the volumes of pods that stay on the
// Node, nothing on an unreachable Node), bounded by nodeVolumeDetachTimeoutSeconds. The
// exclude-wait-for-node-volume-detach annotation skips it.
func (r *Reconciler) waitForVolumeDetach(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	if s.node == nil {
		return reconcile.Result{}, true, nil
	}
	if why := machinedrain.SkipVolumeWait(m); why != "" {
		log.FromContext(ctx).V(1).Info(why, "machine", client.ObjectKeyFromObject(m))
		return reconcile.Result{}, true, nil
	}
	w, err := r.Drainer.Volumes(ctx, s.node.Name)
	switch {
	case errors.Is(err, drain.ErrNodeNotFound):
		return reconcile.Result{}, true, nil
	case err != nil:
		s.deletion.step = ReasonWaitingForVolumeDetach
		s.deletion.message = fmt.Sprintf("reading the volumes of Node %s failed, retrying: %v", s.node.Name, err)
		return reconcile.Result{}, false, err
	case w.Skip != "":
		log.FromContext(ctx).Info(w.Skip, "machine", client.ObjectKeyFromObject(m))
		return reconcile.Result{}, true, nil
	case len(w.Waiting) == 0:
		return reconcile.Result{}, true, nil
	}
	start := s.now
	if d := m.Status.Deletion; d != nil && d.WaitForNodeVolumeDetachStartTime != nil {
		start = d.WaitForNodeVolumeDetachStartTime.Time
	} else {
		s.volumeStart = &start
	}
	if timeout := seconds(m.Spec.Deletion, func(d *v1beta1.MachineDeletionSpec) *int32 { return d.NodeVolumeDetachTimeoutSeconds }); timeout > 0 && s.now.Sub(start) >= timeout {
		r.Recorder.Eventf(m, nil, "Warning", EventVolumeDetachGaveUp, "WaitForVolumeDetach",
			"%d volume(s) still attached to Node %s after nodeVolumeDetachTimeoutSeconds (%s); deletion goes on", len(w.Waiting), s.node.Name, timeout)
		return reconcile.Result{}, true, nil
	}
	s.deletion.step = ReasonWaitingForVolumeDetach
	s.deletion.message = volumeMessage(w)
	return reconcile.Result{RequeueAfter: volumePoll}, false, nil
}

// volumeMessage says which volumes the wait waits for, and which it ignores.
func volumeMessage(w *drain.VolumeWait) string {
	names := make([]string, 0, len(w.Waiting))
	for _, v := range w.Waiting {
		names = append(names, v.String())
	}
	msg := fmt.Sprintf("waiting for %d volume(s) to detach from Node %s: %s", len(names), w.Node, strings.Join(names, ", "))
	if len(w.Ignored) > 0 {
		ignored := make([]string, 0, len(w.Ignored))
		for _, v := range w.Ignored {
			ignored = append(ignored, v.String()+" "+v.Reason)
		}
		msg += fmt.Sprintf("; not waiting for %d: %s", len(ignored), strings.Join(ignored, "; "))
	}
	return msg
}

// deleteInstance asks the provider to delete the instance and waits until Exists is false.
func (r *Reconciler) deleteInstance(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	view, pctx := r.providerView(ctx, s)
	s.deletion.step = ReasonDeletingInstance
	exists, err := r.callExists(pctx, view)
	if err != nil {
		s.deletion.message = fmt.Sprintf("looking up the instance failed, retrying: %v", err)
		return reconcile.Result{}, false, err
	}
	if exists {
		if err := r.callDelete(pctx, view); err != nil {
			s.deletion.message = fmt.Sprintf("deleting the instance failed, retrying: %v", err)
			return reconcile.Result{}, false, err
		}
		if exists, err = r.callExists(pctx, view); err != nil || exists {
			s.deletion.message = "waiting for the provider to delete the instance"
			return reconcile.Result{RequeueAfter: instancePoll}, false, err
		}
		r.Recorder.Eventf(s.machine, nil, "Normal", EventInstanceDeleted, "Delete", "deleted instance %s", s.machine.Spec.ProviderID)
	}
	return reconcile.Result{}, true, nil
}

// deleteNode deletes the Node object, retrying for at most nodeDeletionTimeoutSeconds.
func (r *Reconciler) deleteNode(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.node == nil {
		return reconcile.Result{}, true, nil
	}
	m := s.machine
	err := r.Client.Delete(ctx, s.node, client.Preconditions{UID: &s.node.UID})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		if err == nil {
			r.Recorder.Eventf(m, nil, "Normal", EventNodeDeleted, "Delete", "deleted Node %s", s.node.Name)
		}
		return reconcile.Result{}, true, nil
	}
	start := s.now
	if d := m.Status.Deletion; d != nil && d.NodeDeletionStartTime != nil {
		start = d.NodeDeletionStartTime.Time
	} else {
		s.nodeDelStart = &start
	}
	timeout := defaultNodeDeletionTimeout
	if m.Spec.Deletion != nil && m.Spec.Deletion.NodeDeletionTimeoutSeconds != nil {
		timeout = time.Duration(*m.Spec.Deletion.NodeDeletionTimeoutSeconds) * time.Second
	}
	if timeout > 0 && s.now.Sub(start) >= timeout {
		r.Recorder.Eventf(m, nil, "Warning", EventNodeDeleteGaveUp, "Delete",
			"could not delete Node %s within nodeDeletionTimeoutSeconds (%s), leaving it: %v", s.node.Name, timeout, err)
		return reconcile.Result{}, true, nil
	}
	s.deletion.step = ReasonDeletingNode
	s.deletion.message = fmt.Sprintf("deleting Node %s failed, retrying: %v", s.node.Name, err)
	return reconcile.Result{RequeueAfter: nodeDeletePoll}, false, nil
}

// removeFinalizer lets the API server delete the Machine. The patch is guarded by the
// resourceVersion the Machine was read at, since it replaces the whole finalizers list; a
// conflict (the node linker or a user wrote the Machine meanwhile) is expected: it is retried
// soon, and the Deleting condition is left as an earlier reconcile wrote it.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	patched := m.DeepCopy()
	kept := patched.Finalizers[:0]
	for _, f := range patched.Finalizers {
		if f != v1beta1.MachineFinalizer {
			kept = append(kept, f)
		}
	}
	patched.Finalizers = kept
	err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		s.deletion.step, s.deletion.message = "", ""
		return reconcile.Result{RequeueAfter: write.ConflictRetry}, false, nil
	case err != nil && !apierrors.IsNotFound(err):
		s.deletion.step = ReasonRemovingFinalizer
		s.deletion.message = fmt.Sprintf("removing the finalizer failed, retrying: %v", err)
		return reconcile.Result{}, false, fmt.Errorf("removing the finalizer of machine %s: %w", client.ObjectKeyFromObject(m), err)
	}
	s.finalizerRemoved = true
	return reconcile.Result{}, true, nil
}

// nodeOutOfReach says why this manager cannot drain the Machine's Node (the Machine has one:
// machinedrain.Skip covers a Machine without), or "" when it can.
func nodeOutOfReach(s *scope) string {
	switch {
	case s.nodeElsewhere:
		return fmt.Sprintf("draining skipped: Node %s is in another cluster, out of this manager's reach (cluster-manager drains the Nodes of remote-nodes Machines there under its preDrain hook drain-workload-node; otherwise drain it there, or hold deletion with a preDrain hook)", s.machine.Status.NodeRef.Name)
	case s.node == nil:
		return fmt.Sprintf("draining skipped: Node %s no longer exists", s.machine.Status.NodeRef.Name)
	}
	return ""
}

func drainedCondition(m *v1beta1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, v1beta1.DrainedCondition)
}

// seconds reads an optional timeout field of spec.deletion as a duration (0 when unset).
func seconds(d *v1beta1.MachineDeletionSpec, field func(*v1beta1.MachineDeletionSpec) *int32) time.Duration {
	if d == nil || field(d) == nil {
		return 0
	}
	return time.Duration(*field(d)) * time.Second
}
