package machinehealthcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// machineWriters bounds the Machine writes one reconcile makes in parallel.
const machineWriters = 8

// job is the work one outcome needs: a condition to write, an action to take, or both.
type job struct {
	o    *outcome
	cond *metav1.Condition // nil: the Machine's condition is already right (or not ours to write)
}

// remediate writes each Machine's HealthCheckSucceeded condition where it changed, then starts
// the remediations the evaluation chose and removes the requests of Machines healthy again. A
// Machine is marked Remediating before it is deleted: that mark is how later passes count it as in
// flight. Only Machines with something to do cost an API call.
func (r *Reconciler) remediate(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	var res ctrl.Result
	ev := s.eval
	if s.templateProblem != "" && ev.started > 0 {
		r.Recorder.Eventf(s.mhc, nil, corev1.EventTypeWarning, EventRemediationTemplateUnusable, "Remediate",
			"cannot remediate %d unhealthy machines: %s", ev.started, s.templateWhy)
		ev.block(s.templateProblem, s.templateWhy)
		res.RequeueAfter = templateRetry
	}
	jobs := jobsOf(ev, remedyOf(s.mhc))
	err := forEach(len(jobs), machineWriters, func(i int) error { return r.apply(ctx, s, jobs[i]) })
	if s.changed.Load() {
		res.RequeueAfter = steps.SoonestAfter(res.RequeueAfter, write.ConflictRetry)
	}
	return res, true, err
}

// jobsOf returns the outcomes with something to do: a condition that changes, an action. It is
// pure; a pass over Machines whose verdicts did not change yields no job.
func jobsOf(ev *evaluation, remedy func(*outcome) string) []job {
	var jobs []job
	for i := range ev.outcomes {
		o := &ev.outcomes[i]
		j := job{o: o, cond: conditionChange(o, remedy)}
		if j.cond != nil || o.action != actNone {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// conditionChange returns the HealthCheckSucceeded condition to write on o's Machine, nil when
// its current one is right or is not ours to write.
func conditionChange(o *outcome, remedy func(*outcome) string) *metav1.Condition {
	current := meta.FindStatusCondition(o.target.machine.Status.Conditions, v1beta1.HealthCheckSucceededCondition)
	if o.health.state == stateHealthy && stillHealthy(current, o.target) {
		return nil // the common case, checked without formatting a message
	}
	c, ours := machineCondition(o, remedy)
	if !ours || sameCondition(current, c) {
		return nil
	}
	return &c
}

// stillHealthy reports whether current is the condition machineCondition makes for healthy t.
func stillHealthy(current *metav1.Condition, t *target) bool {
	if current == nil || current.Status != metav1.ConditionTrue || current.Reason != ReasonHealthy ||
		current.ObservedGeneration != t.machine.Generation || t.node == nil {
		return false
	}
	msg, name := current.Message, t.node.Name
	return len(msg) == len("Node ")+len(name)+len(" is healthy") &&
		strings.HasPrefix(msg, "Node ") && strings.HasSuffix(msg, " is healthy") && msg[len("Node "):len("Node ")+len(name)] == name
}

// remedyOf returns how mhc remediates a Machine, in words.
func remedyOf(mhc *v1beta1.MachineHealthCheck) func(*outcome) string {
	if ref := mhc.Spec.RemediationTemplate; ref != nil {
		kind, _ := requestKind(ref.Kind)
		return func(o *outcome) string {
			return fmt.Sprintf("requested external remediation %s %s (from %s %s)", kind, o.target.machine.Name, ref.Kind, ref.Name)
		}
	}
	policy := retryPolicyOf(&mhc.Spec)
	return func(o *outcome) string {
		m := o.target.machine
		msg := fmt.Sprintf("deleting the Machine so that MachineSet %s replaces it", machineSetOf(m))
		if !policy.tracked {
			return msg
		}
		l := o.lineageOf()
		id := l.ID
		if id == "" {
			id = m.Name
		}
		msg += fmt.Sprintf(" (remediation %d of lineage %s", l.Retries+1, id)
		if policy.limited() {
			msg += ", " + policy.maxText
		}
		return msg + ")"
	}
}

// apply does one job. A Machine to remediate that changed since it was judged (a conflict) is
// left alone and the check is requeued after write.ConflictRetry: the change may be one the
// Machine watch filters out (the machine controller's Ready condition), so no event would bring it
// back. A Machine gone is left alone: its delete event brings the check back.
//
// Remediation by deletion, when the check tracks lineages, is three writes, each guarded by the
// resourceVersion the one before left: the Remediating condition, the lineage mark (annotations
// and the lineage finalizer, see package lineage), the delete. The mark must be stored before the
// delete, so that the Machine's set finds it however late it looks.
func (r *Reconciler) apply(ctx context.Context, s *scope, j job) error {
	m := j.o.target.machine
	cur := m
	if j.cond != nil {
		judged := "" // a condition alone is written whatever else changed on the Machine
		if j.o.action == actRemediate {
			judged = m.ResourceVersion
		}
		updated, err := r.setHealthCondition(ctx, m, *j.cond, judged, s)
		if err != nil || updated == nil {
			return err
		}
		observeCondition(client.ObjectKeyFromObject(s.mhc), j.cond)
		cur = updated
	}
	switch j.o.action {
	case actRemediate:
		if s.external {
			return r.requestRemediation(ctx, s, j.o)
		}
		if s.eval.retry.tracked {
			marked, err := r.updateLineage(ctx, s, cur, "marking the lineage of", func(m *v1beta1.Machine) bool {
				lineage.Mark(m, s.now)
				return true
			})
			if err != nil || marked == nil {
				return err
			}
			cur = marked
		}
		return r.deleteMachine(ctx, s, j.o, cur.ResourceVersion, remedyOf(s.mhc)(j.o))
	case actCleanup:
		return r.deleteRequest(ctx, s, m)
	case actReset:
		if updated, err := r.updateLineage(ctx, s, cur, "resetting the lineage of", lineage.Reset); err != nil || updated == nil {
			return err
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, EventLineageReset, "ResetLineage",
			"healthy for %s (minHealthyPeriodSeconds): lineage %s starts over; it had been remediated %d times",
			s.eval.retry.minHealthy, j.o.lineageOf().ID, j.o.lineageOf().Retries)
	case actRelease:
		if updated, err := r.updateLineage(ctx, s, cur, "releasing the lineage finalizer of", lineage.Release); err != nil || updated == nil {
			return err
		}
		log.FromContext(ctx).Info("removed the lineage finalizer", "machine", m.Name, "why", releaseReason(j.o))
	}
	return nil
}

// updateLineage writes change to m's lineage annotations or finalizer (see lineage.Update) and
// records the write, so that the next pass reads the Machine as written. It returns the updated
// Machine, or nil when m changed since it was read (a conflict: s is marked to be evaluated again)
// or is gone.
func (r *Reconciler) updateLineage(ctx context.Context, s *scope, m *v1beta1.Machine, doing string, change func(*v1beta1.Machine) bool) (*v1beta1.Machine, error) {
	updated, err := lineage.Update(ctx, r.Client, m, change)
	switch {
	case err == nil:
		if updated != m {
			r.written.Wrote(m.ResourceVersion, updated)
		}
		return updated, nil
	case apierrors.IsConflict(err):
		s.changed.Store(true)
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("%s machine %s: %w", doing, client.ObjectKeyFromObject(m), err)
	}
}

// setHealthCondition writes c on m by server-side apply of that one condition (field manager
// FieldOwner), so it never overwrites, nor conflicts with, what the machine controller and the
// node linker write on the Machine. judged, when not empty, is the resourceVersion m must still
// have (see healthConditionApply). It returns the updated Machine, or nil when m changed since it
// was judged or is gone.
func (r *Reconciler) setHealthCondition(ctx context.Context, m *v1beta1.Machine, c metav1.Condition, judged string, s *scope) (*v1beta1.Machine, error) {
	updated, err := write.Status(ctx, r.Client, r.written, m, healthConditionApply(m, c, judged, s.now), FieldOwner, &v1beta1.Machine{})
	switch {
	case err == nil:
		return updated, nil // nil when the Machine is gone
	case apierrors.IsConflict(err):
		s.changed.Store(true)
		return nil, nil
	default:
		return nil, fmt.Errorf("setting %s on machine %s: %w", c.Type, client.ObjectKeyFromObject(m), err)
	}
}

// deleteMachine deletes o's Machine, provided it is still the one judged (same UID, and the
// resourceVersion rv its last write left); its MachineSet replaces it and the machine controller
// drains it as usual. remedy is the remediation in words, for the event.
func (r *Reconciler) deleteMachine(ctx context.Context, s *scope, o *outcome, rv, remedy string) error {
	m := o.target.machine
	uid := m.UID
	victim := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	err := r.Client.Delete(ctx, victim, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil:
		r.deletions.Deleted(s.mhc, m.Name, uid)
		observeRemediationStarted(client.ObjectKeyFromObject(s.mhc))
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, eventReason(o), "Delete", "remediating: %s; %s", o.health.message, remedy)
		return nil
	case apierrors.IsConflict(err):
		s.changed.Store(true)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("deleting unhealthy machine %s: %w", client.ObjectKeyFromObject(m), err)
	}
}

// requestRemediation creates o's external remediation request.
func (r *Reconciler) requestRemediation(ctx context.Context, s *scope, o *outcome) error {
	m := o.target.machine
	req, err := newRequest(s.template, m)
	if err != nil {
		return err
	}
	switch err := r.Client.Create(ctx, req); {
	case err == nil:
		observeRemediationStarted(client.ObjectKeyFromObject(s.mhc))
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, eventReason(o), "RequestRemediation",
			"remediating: %s; created %s %s", o.health.message, req.GetKind(), req.GetName())
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil // requested before; it counts as in flight from the next pass
	default:
		return fmt.Errorf("creating %s for machine %s: %w", req.GetKind(), client.ObjectKeyFromObject(m), err)
	}
}

// deleteRequest removes the external remediation request of a Machine that is healthy again.
func (r *Reconciler) deleteRequest(ctx context.Context, s *scope, m *v1beta1.Machine) error {
	gvk, err := requestGVK(s.mhc.Spec.RemediationTemplate)
	if err != nil {
		return nil //nolint:nilerr // cannot happen: requests were found with this kind
	}
	req := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	req.SetGroupVersionKind(gvk)
	if err := r.Client.Delete(ctx, req); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing %s %s/%s of healthy machine: %w", gvk.Kind, m.Namespace, m.Name, err)
	}
	log.FromContext(ctx).V(1).Info("machine is healthy again; removed its remediation request", "machine", m.Name, "kind", gvk.Kind)
	return nil
}

func eventReason(o *outcome) string {
	if o.health.cause != "" {
		return o.health.cause
	}
	return ReasonRemediating
}

// forEach calls f(0..n-1) with at most workers calls running at once and joins their errors.
func forEach(n, workers int, f func(i int) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, workers)
	)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
