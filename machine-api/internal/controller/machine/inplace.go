package machine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/machinedrain"
	"machineapi.dev/machine-api/provider"
)

// Updating reasons: the step an in-place update waits on, and its end.
const (
	ReasonUpdateDraining   = "Draining"
	ReasonUpdatingInstance = "UpdatingInstance"
	ReasonUpdateWaitNode   = "WaitingForNode"
	ReasonUncordoning      = "Uncordoning"
	ReasonInPlaceUpdated   = "InPlaceUpdated"
	// ReasonUpdatingInPlace (UpToDate=False): the Machine has its template's spec and the update
	// of its instance runs.
	ReasonUpdatingInPlace = "UpdatingInPlace"
)

// updatePoll is how often a running in-place update looks again when nothing it waits for sends
// an event (the provider's update, the drain).
const updatePoll = 5 * time.Second

// inPlaceState is what the in-place steps decided: the new status.inPlaceUpdate (record) and the
// Updating condition (nil: leave it).
type inPlaceState struct {
	record   *v1beta1.MachineInPlaceUpdate
	updating *metav1.Condition
	// running: the Machine has the spec of record.templateHash and its instance is being updated.
	running bool
}

// updateInPlace follows a Machine's in-place update (see MachineDeploymentRollout.InPlace): while
// its deployment's template differs from its spec it records the provider's plan for that
// template (planInPlace); once its MachineSet has given it the template's spec, it updates the
// instance (runInPlace).
func (r *Reconciler) updateInPlace(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	rec := m.Status.InPlaceUpdate
	if rec != nil && rec.TemplateHash == uptodate.SpecHash(&m.Spec) {
		return r.runInPlace(ctx, s)
	}
	return r.planInPlace(ctx, s)
}

// planInPlace asks the provider, once per template, how it would bring the instance to the
// template of the Machine's deployment, when the deployment allows in-place updates and the
// template differs from the Machine. The answer goes to status.inPlaceUpdate, where the
// deployment (which route to take), the set (how to pace the updates) and kubectl machine
// rollout plan read it. A plan for a template that is no longer the deployment's is removed.
func (r *Reconciler) planInPlace(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m, d := s.machine, s.desired
	updater, ok := r.Provider.(provider.InPlaceUpdater)
	if !ok || d.Template == nil || d.InPlace == v1beta1.InPlaceNever || m.Spec.ProviderID == "" {
		if m.Status.InPlaceUpdate != nil {
			s.inPlace = &inPlaceState{} // nothing to plan: the old plan goes
		}
		return reconcile.Result{}, true, nil
	}
	want := uptodate.TemplateHash(d.Template)
	if want == uptodate.SpecHash(&m.Spec) {
		if m.Status.InPlaceUpdate != nil {
			s.inPlace = &inPlaceState{}
		}
		return reconcile.Result{}, true, nil
	}
	if rec := m.Status.InPlaceUpdate; rec != nil && rec.TemplateHash == want {
		return reconcile.Result{}, true, nil // planned already
	}
	have, pctx := r.providerView(ctx, s)
	desired := m.DeepCopy()
	desired.Spec.ProviderSpec, desired.Spec.Versions = d.Template.Spec.ProviderSpec, d.Template.Spec.Versions
	desired, err := r.resolved(ctx, desired)
	if err != nil {
		return reconcile.Result{}, true, err
	}
	plan, err := updater.CanUpdateInPlace(pctx, have, desired)
	var invalid *provider.InvalidConfigurationError
	if errors.As(err, &invalid) {
		// The template cannot work on this instance: not in place, whatever else (Prefer
		// replaces, and the new Machine says why it fails; Only stalls, naming it).
		msg := "spec.providerSpec: " + invalid.Message
		if r := []rune(msg); len(r) > 256 {
			msg = string(r[:255]) + "…"
		}
		s.inPlace = &inPlaceState{record: &v1beta1.MachineInPlaceUpdate{TemplateHash: want, Unsupported: []string{msg}}}
		r.Recorder.Eventf(m, nil, "Warning", ReasonInvalidConfiguration, "UpdateInPlace", "the template cannot be applied in place: %s", invalid.Message)
		return reconcile.Result{}, true, nil
	}
	if err != nil {
		log.FromContext(ctx).Info("the provider could not plan an in-place update; asking again", "error", err.Error())
		return reconcile.Result{RequeueAfter: updatePoll}, true, nil
	}
	changes := uptodate.SpecChanges(&have.Spec, &desired.Spec)
	unsupported := append(slices.Clone(plan.Unsupported), uptodate.Uncovered(changes, append(slices.Clone(plan.Paths), plan.Unsupported...))...)
	slices.Sort(unsupported)
	paths := slices.Sorted(slices.Values(plan.Paths))
	disruption := v1beta1.InPlaceDisruptionNone
	if plan.Disruptive {
		disruption = v1beta1.InPlaceDisruptionDrain
	}
	s.inPlace = &inPlaceState{record: &v1beta1.MachineInPlaceUpdate{
		TemplateHash: want, Paths: slices.Compact(paths), Unsupported: slices.Compact(unsupported), Disruption: disruption,
	}}
	return reconcile.Result{}, true, nil
}

// resolved returns m with the providerSpec of the MachineClass it names inline, as providers see
// a Machine.
func (r *Reconciler) resolved(ctx context.Context, m *v1beta1.Machine) (*v1beta1.Machine, error) {
	ref := m.Spec.ProviderSpec.MachineClass
	if ref == nil {
		return m, nil
	}
	class := &v1beta1.MachineClass{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ref.Name}, class); err != nil {
		return nil, fmt.Errorf("getting MachineClass %s/%s, named by the template, to plan an in-place update: %w", m.Namespace, ref.Name, err)
	}
	m.Spec.ProviderSpec = v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: class.Spec.ProviderSpec.Raw}}
	return m, nil
}

// runInPlace updates the instance to the Machine's spec, one step per reconcile, each recorded in
// status.inPlaceUpdate so that a restarted manager goes on where it stopped: for a disruptive
// update it cordons and drains the Node (the Machine's drain rules and nodeDrainTimeoutSeconds;
// lifecycle hooks are a deletion's, not an update's), asks the provider until the instance runs
// the new spec, waits for the Node to come back Ready, and uncordons it if it cordoned it. Then
// the record goes and Updating=False/InPlaceUpdated says what changed.
func (r *Reconciler) runInPlace(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	m := s.machine
	rec := m.Status.InPlaceUpdate.DeepCopy()
	st := &inPlaceState{record: rec, running: true}
	s.inPlace = st
	if rec.StartTime == nil {
		rec.StartTime = ptr.To(metav1.NewTime(s.now))
	}
	step := func(reason, msg string) {
		st.updating = &metav1.Condition{Type: v1beta1.UpdatingCondition, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	}
	updater, ok := r.Provider.(provider.InPlaceUpdater)
	if !ok {
		step(ReasonUpdatingInstance, "the provider cannot update instances in place; delete the Machine to replace it")
		return reconcile.Result{}, true, nil
	}
	node := s.node
	if rec.Disruption == v1beta1.InPlaceDisruptionDrain && node != nil && rec.InstanceUpdatedTime == nil {
		if res, done, err := r.drainForUpdate(ctx, s, rec, step); !done || err != nil {
			return res, true, err
		}
	}
	if rec.InstanceUpdatedTime == nil {
		view, pctx := r.providerView(ctx, s)
		start := r.Clock.Now()
		err := updater.UpdateInPlace(pctx, view)
		observeProviderCall("UpdateInPlace", start, r.Clock.Now(), err)
		if wait, ok := provider.AsRequeueAfter(err); ok {
			step(ReasonUpdatingInstance, fmt.Sprintf("the provider updates the instance: %s", wait.Error()))
			return reconcile.Result{RequeueAfter: wait.After}, true, nil
		}
		if err != nil {
			step(ReasonUpdatingInstance, fmt.Sprintf("the provider failed to update the instance, retrying: %v", err))
			return reconcile.Result{}, true, err
		}
		rec.InstanceUpdatedTime = ptr.To(metav1.NewTime(s.now))
	}
	if rec.Disruption == v1beta1.InPlaceDisruptionDrain && node != nil {
		if !backAfter(node, rec) {
			step(ReasonUpdateWaitNode, fmt.Sprintf("instance updated; waiting for Node %s to be Ready again", node.Name))
			return reconcile.Result{RequeueAfter: updatePoll}, true, nil
		}
		if rec.CordonedNode != "" {
			if err := r.Drainer.Uncordon(ctx, rec.CordonedNode); err != nil && !errors.Is(err, drain.ErrNodeNotFound) {
				step(ReasonUncordoning, fmt.Sprintf("uncordoning Node %s failed, retrying: %v", node.Name, err))
				return reconcile.Result{}, true, err
			}
		}
	}
	inPlaceDuration.WithLabelValues(string(rec.Disruption)).Observe(s.now.Sub(rec.StartTime.Time).Seconds())
	took := s.now.Sub(rec.StartTime.Time).Round(time.Second)
	msg := fmt.Sprintf("updated in place in %s: %s", took, strings.Join(rec.Paths, ", "))
	st.record, st.running = nil, false
	st.updating = &metav1.Condition{Type: v1beta1.UpdatingCondition, Status: metav1.ConditionFalse, Reason: ReasonInPlaceUpdated, Message: msg}
	r.Recorder.Eventf(m, nil, "Normal", ReasonInPlaceUpdated, "UpdateInPlace", "%s", msg)
	log.FromContext(ctx).Info("updated the instance in place", "paths", rec.Paths, "disruption", rec.Disruption, "took", took)
	return reconcile.Result{}, true, nil
}

// drainForUpdate cordons and drains the Node before a disruptive update, and reports whether the
// update may go on (drained, skipped, or past nodeDrainTimeoutSeconds).
func (r *Reconciler) drainForUpdate(ctx context.Context, s *scope, rec *v1beta1.MachineInPlaceUpdate, step func(reason, msg string)) (reconcile.Result, bool, error) {
	m, node := s.machine, s.node
	req := machinedrain.Request(m, "", rec.NodeDrainStartTime, s.now)
	req.HeldBy = nil // preDrain hooks hold a deletion, not an update
	d := drain.DecideNode(req)
	switch d.Action {
	case drain.NodeSkip:
		return reconcile.Result{}, true, nil
	case drain.NodeGiveUp:
		r.Recorder.Eventf(m, nil, "Warning", ReasonDrainTimeout, "UpdateInPlace",
			"draining Node %s for the in-place update gave up after nodeDrainTimeoutSeconds (%s); the update goes on", node.Name, req.Timeout)
		return reconcile.Result{}, true, nil
	}
	if rec.NodeDrainStartTime == nil {
		rec.NodeDrainStartTime = ptr.To(metav1.NewTime(d.StartedAt))
		if !node.Spec.Unschedulable {
			rec.CordonedNode = node.Name // uncordoned afterwards only if the update cordoned it
		}
		rec.NodeBootID = node.Status.NodeInfo.BootID
	}
	rules, err := machinedrain.ReadRules(ctx, r.Client, m)
	if err != nil {
		step(ReasonUpdateDraining, fmt.Sprintf("cannot drain Node %s: %v; fix or delete the rule", node.Name, err))
		return reconcile.Result{}, false, nil
	}
	res, err := r.Drainer.Drain(ctx, node.Name, d.Step(rules))
	switch {
	case errors.Is(err, drain.ErrNodeNotFound):
		return reconcile.Result{}, true, nil
	case err != nil:
		step(ReasonUpdateDraining, fmt.Sprintf("draining Node %s failed, retrying: %v", node.Name, err))
		return reconcile.Result{}, false, err
	case !res.Done:
		step(ReasonUpdateDraining, res.Summary())
		return reconcile.Result{RequeueAfter: pollUntil(drainPoll, res.NextDeletion, s.now)}, false, nil
	}
	if deleted := res.DeletionSummary(); deleted != "" {
		r.Recorder.Eventf(m, nil, "Warning", EventPodsDeleted, "UpdateInPlace", "%s", deleted)
	}
	return reconcile.Result{}, true, nil
}

// backAfter reports whether node is Ready again after the update rec of its instance: Ready, and
// either booted since the update began (its boot ID is not the one recorded when draining began),
// or Ready again since the update began (it went NotReady meanwhile), or reporting Ready since the
// provider said the instance was updated (for an update that did not reboot it).
func backAfter(node *corev1.Node, rec *v1beta1.MachineInPlaceUpdate) bool {
	c := nodeReadyCondition(node)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if rec.NodeBootID != "" && node.Status.NodeInfo.BootID != "" && node.Status.NodeInfo.BootID != rec.NodeBootID {
		return true
	}
	// Conditions are recorded to the second.
	if rec.StartTime != nil && !c.LastTransitionTime.Time.Before(rec.StartTime.Truncate(time.Second)) {
		return true
	}
	return rec.InstanceUpdatedTime != nil && !c.LastHeartbeatTime.Time.Before(rec.InstanceUpdatedTime.Truncate(time.Second))
}

// inPlaceUpToDate is the UpToDate condition of a Machine whose instance is being updated in place:
// it has its template's spec, but not yet its instance.
func inPlaceUpToDate(rec *v1beta1.MachineInPlaceUpdate) metav1.Condition {
	return metav1.Condition{Type: v1beta1.UpToDateCondition, Status: metav1.ConditionFalse, Reason: ReasonUpdatingInPlace,
		Message: fmt.Sprintf("its instance is being updated in place: %s", strings.Join(rec.Paths, ", "))}
}
