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

// job is the work one outcome needs: a verdict to write, an action to take, or both.
type job struct {
	o       *outcome
	verdict *verdict // nil: the Machine's conditions are already right (or not ours to write)
}

// remediate writes each Machine's verdict where it changed (HealthCheckSucceeded, and
// OwnerRemediated for the Machines whose MachineSet is to replace them), creates the external
// requests the evaluation chose and removes those of Machines healthy again. Asking the owner is
// the verdict itself: one write, after which the set creates the replacement and deletes the
// Machine (package lineage). Only Machines with something to do cost an API call.
func (r *Reconciler) remediate(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	var res ctrl.Result
	ev := s.eval
	if s.templateProblem != "" && ev.started > 0 {
		r.Recorder.Eventf(s.mhc, nil, corev1.EventTypeWarning, EventRemediationTemplateUnusable, "Remediate",
			"cannot remediate %d unhealthy machines: %s", ev.started, s.templateWhy)
		ev.block(s.templateProblem, s.templateWhy)
		res.RequeueAfter = templateRetry
	}
	jobs := jobsOf(ev, remedyOf(s.mhc), s.external)
	err := forEach(len(jobs), machineWriters, func(i int) error { return r.apply(ctx, s, jobs[i]) })
	if s.changed.Load() {
		res.RequeueAfter = steps.SoonestAfter(res.RequeueAfter, write.ConflictRetry)
	}
	return res, true, err
}

// jobsOf returns the outcomes with something to do: a verdict that changes, an action. It is
// pure; a pass over Machines whose verdicts did not change yields no job.
func jobsOf(ev *evaluation, remedy func(*outcome) string, external bool) []job {
	var jobs []job
	for i := range ev.outcomes {
		o := &ev.outcomes[i]
		j := job{o: o, verdict: verdictChange(o, remedy, external)}
		if j.verdict != nil || o.action != actNone {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// verdictChange returns the verdict to write on o's Machine, nil when its current conditions say
// it already or are not ours to write.
func verdictChange(o *outcome, remedy func(*outcome) string, external bool) *verdict {
	m := o.target.machine
	if o.health.state == stateHealthy && stillHealthy(m, o.target) {
		return nil // the common case, checked without formatting a message
	}
	v, ours := machineVerdict(o, remedy, external)
	if !ours || v.carries(m) {
		return nil
	}
	return &v
}

// stillHealthy reports whether m carries the verdict machineVerdict makes for healthy t.
func stillHealthy(m *v1beta1.Machine, t *target) bool {
	current := meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition)
	if current == nil || current.Status != metav1.ConditionTrue || current.Reason != ReasonHealthy ||
		current.ObservedGeneration != m.Generation || t.node == nil || lineage.Requested(m) != nil {
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
		msg := fmt.Sprintf("MachineSet %s is asked to create a replacement and delete this Machine", machineSetOf(m))
		if !policy.tracked {
			return msg
		}
		l := o.lineageOf()
		id := l.ID
		if id == "" {
			id = m.Name
		}
		msg += fmt.Sprintf(" (remediation %d of lineage %s", l.Retries+1, id)
		if o.reset && o.lineage != nil {
			msg += fmt.Sprintf(", which starts over: the Machine had been healthy for %s before it failed", policy.minHealthy)
		}
		if policy.limited() {
			msg += ", " + policy.maxText
		}
		return msg + ")"
	}
}

// apply does one job. A verdict that starts a remediation is applied only to the Machine as
// judged: one that changed since (a conflict) is left alone and the check is requeued after
// write.ConflictRetry, since the change may be one the Machine watch filters out (the machine
// controller's Ready condition), so no event would bring it back. A Machine gone is left alone:
// its delete event brings the check back.
func (r *Reconciler) apply(ctx context.Context, s *scope, j job) error {
	o, m := j.o, j.o.target.machine
	if j.verdict != nil {
		judged := "" // a verdict alone is written whatever else changed on the Machine
		if o.action == actRemediate {
			judged = m.ResourceVersion
		}
		updated, err := r.setVerdict(ctx, m, *j.verdict, judged, s)
		if err != nil || updated == nil {
			return err
		}
		observeCondition(client.ObjectKeyFromObject(s.mhc), &j.verdict.health)
		if o.action == actRemediate && j.verdict.owner != nil {
			observeRemediationStarted(client.ObjectKeyFromObject(s.mhc))
			r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, eventReason(o), "Remediate", "remediating: %s; %s", o.health.message, j.verdict.owner.Message)
			log.FromContext(ctx).Info("asked the owner to remediate an unhealthy machine", "machine", m.Name, "cause", o.health.cause,
				"why", o.health.message, "owner", machineSetOf(m), "reason", j.verdict.owner.Reason)
		}
	}
	switch o.action {
	case actRemediate:
		if s.external {
			return r.requestRemediation(ctx, s, o)
		}
	case actCleanup:
		return r.deleteRequest(ctx, s, m)
	}
	return nil
}

// setVerdict writes v on m by server-side apply of the conditions this controller owns (field
// manager FieldOwner), so it never overwrites, nor conflicts with, what the machine controller
// and the node linker write on the Machine. judged, when not empty, is the resourceVersion m must
// still have (see verdictApply). It returns the updated Machine, or nil when m changed since it
// was judged or is gone.
func (r *Reconciler) setVerdict(ctx context.Context, m *v1beta1.Machine, v verdict, judged string, s *scope) (*v1beta1.Machine, error) {
	updated, err := write.Status(ctx, r.Client, verdictApply(m, v, judged, s.now), FieldOwner, &v1beta1.Machine{})
	switch {
	case err == nil:
		return updated, nil // nil when the Machine is gone
	case apierrors.IsConflict(err):
		s.changed.Store(true)
		return nil, nil
	default:
		return nil, fmt.Errorf("setting %s on machine %s: %w", v.health.Type, client.ObjectKeyFromObject(m), err)
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
