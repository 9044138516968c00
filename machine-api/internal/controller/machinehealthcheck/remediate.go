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
		res.RequeueAfter = soonest(res.RequeueAfter, conflictRetry)
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
	return func(o *outcome) string {
		return fmt.Sprintf("deleting the Machine so that MachineSet %s replaces it", machineSetOf(o.target.machine))
	}
}

// apply does one job. A Machine that changed since it was read (a conflict) is left alone and the
// check is requeued after conflictRetry: the change may be one the Machine watch filters out (the
// machine controller's Ready condition), so no event would bring it back. A Machine gone is left
// alone: its delete event brings the check back.
func (r *Reconciler) apply(ctx context.Context, s *scope, j job) error {
	m := j.o.target.machine
	rv := m.ResourceVersion
	if j.cond != nil {
		updated, err := r.setHealthCondition(ctx, m, *j.cond, s)
		if err != nil || updated == nil {
			return err
		}
		rv = updated.ResourceVersion
	}
	switch j.o.action {
	case actRemediate:
		if s.external {
			return r.requestRemediation(ctx, s, j.o)
		}
		return r.deleteMachine(ctx, s, j.o, rv)
	case actCleanup:
		return r.deleteRequest(ctx, s, m)
	}
	return nil
}

// setHealthCondition writes c on m with a merge patch guarded by m's resourceVersion, so the
// conditions other controllers write are carried over as they were read. It returns the updated
// Machine, or nil when m changed since it was read or is gone.
func (r *Reconciler) setHealthCondition(ctx context.Context, m *v1beta1.Machine, c metav1.Condition, s *scope) (*v1beta1.Machine, error) {
	before := m.DeepCopy()
	updated := m.DeepCopy()
	setCondition(&updated.Status.Conditions, c, s.now)
	err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return updated, nil
	case apierrors.IsConflict(err):
		s.changed.Store(true)
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("setting %s on machine %s: %w", c.Type, client.ObjectKeyFromObject(m), err)
	}
}

// deleteMachine deletes o's Machine, provided it is still the one judged (same UID and
// resourceVersion); its MachineSet replaces it and the machine controller drains it as usual.
func (r *Reconciler) deleteMachine(ctx context.Context, s *scope, o *outcome, rv string) error {
	m := o.target.machine
	uid := m.UID
	victim := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	err := r.Client.Delete(ctx, victim, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil:
		r.deletions.add(uid, s.now)
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, eventReason(o), "Delete",
			"remediating: %s; deleting the Machine so that MachineSet %s replaces it", o.health.message, machineSetOf(m))
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
		return nil // cannot happen: requests were found with this kind
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
