package machineset

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/availability"
	"machineapi.dev/machine-api/internal/uptodate"
)

// EventUpdatingInPlace: the set gave Machines its template's spec, for their provider to update
// their instances in place.
const EventUpdatingInPlace = "UpdatingInPlace"

// inPlacePoll is how often a set whose in-place updates wait for room (maxUnavailable, the
// disruption budgets) looks again, besides the events of its Machines.
const inPlacePoll = 10 * time.Second

// updateInPlace gives the set's Machines its template's spec where their deployment allows
// in-place updates (spec.rollout.inPlace) and their provider's plan (status.inPlaceUpdate) covers
// the template: the machine controller then updates each instance. An update that does not stop
// workloads, or a Machine without a Node, is started at once. A disruptive one (drain and reboot)
// waits for room: the set's Machines updating disruptively or unavailable stay within the
// deployment's maxUnavailable (Recreate: no bound), and each start passes the pool's disruption
// budgets and do-not-disrupt annotations as a Rollout, like a replacement (withinBudget).
func (r *Reconciler) updateInPlace(ctx context.Context, s *scope) (reconcile.Result, bool, error) {
	if s.owner == nil || s.owner.inPlace == v1beta1.InPlaceNever || !s.set.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, true, nil
	}
	hash := uptodate.TemplateHash(&s.set.Spec.Template)
	minReady := time.Duration(s.set.Spec.MinReadySeconds) * time.Second
	var now, disruptive []*v1beta1.Machine
	busy := 0 // updating disruptively, or unavailable
	for _, m := range s.active() {
		rec := m.Status.InPlaceUpdate
		if uptodate.SpecHash(&m.Spec) == hash {
			if _, available, _ := availability.Of(m, minReady, s.now); !available || updatingDisruptively(m) {
				busy++
			}
			continue
		}
		if _, available, _ := availability.Of(m, minReady, s.now); !available {
			busy++
		}
		switch {
		case rec == nil || rec.TemplateHash != hash || len(rec.Unsupported) > 0:
			// No plan for this template yet (the machine controller records it), or one the
			// deployment replaces rather than updates.
		case rec.Disruption == v1beta1.InPlaceDisruptionDrain && m.Status.NodeRef != nil:
			disruptive = append(disruptive, m)
		default:
			now = append(now, m)
		}
	}
	room := len(disruptive)
	if s.owner.maxUnavailable >= 0 {
		room = max(0, min(room, int(s.owner.maxUnavailable)-busy))
	}
	errs := []error{r.giveSpec(ctx, s, now)}
	heldBefore := len(s.held)
	errs = append(errs, r.withinBudget(ctx, s, disruptive[:room], func(allowed []*v1beta1.Machine) error {
		err := r.giveSpec(ctx, s, allowed)
		for _, m := range allowed {
			s.updated = append(s.updated, m.Name)
		}
		return err
	}))
	for i := heldBefore; i < len(s.held); i++ {
		s.held[i].update = true
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, false, err
	}
	if room < len(disruptive) {
		return reconcile.Result{RequeueAfter: inPlacePoll}, true, nil
	}
	return reconcile.Result{}, true, nil
}

// giveSpec writes the template's spec on each Machine (uptodate.ApplySpec), guarded by the
// Machine's resourceVersion.
func (r *Reconciler) giveSpec(ctx context.Context, s *scope, machines []*v1beta1.Machine) error {
	if len(machines) == 0 {
		return nil
	}
	names := make([]string, len(machines))
	errs := parallel(len(machines), func(i int) error {
		m := machines[i]
		names[i] = m.Name
		changed := m.DeepCopy()
		if !uptodate.ApplySpec(&s.set.Spec.Template, changed) {
			return nil
		}
		err := r.Client.Patch(ctx, changed, client.MergeFromWithOptions(m, client.MergeFromWithOptimisticLock{}))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("giving Machine %s the spec of its set's template to update it in place: %w", m.Name, err)
		}
		return nil
	})
	r.Recorder.Eventf(s.set, nil, "Normal", EventUpdatingInPlace, "UpdateInPlace",
		"updating %d Machines in place: %s", len(machines), preview(names))
	return errors.Join(errs...)
}

// updatingDisruptively reports whether m's instance is being updated in place by an update that
// stops its workloads: it disrupts its pool like a deletion.
func updatingDisruptively(m *v1beta1.Machine) bool {
	rec := m.Status.InPlaceUpdate
	return rec != nil && rec.Disruption == v1beta1.InPlaceDisruptionDrain && m.Status.NodeRef != nil && rec.TemplateHash == uptodate.SpecHash(&m.Spec)
}
