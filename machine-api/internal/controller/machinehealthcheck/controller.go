package machinehealthcheck

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// templateRetry is how long to wait before reading a missing or unusable remediation template
// again (it is not watched: its kind is the user's).
const templateRetry = 30 * time.Second

// FieldOwner is the server-side apply field manager of the health check controller: of its own
// status, and of the HealthCheckSucceeded and OwnerRemediated conditions on Machines (the only
// fields it writes there).
const FieldOwner = "machinehealthcheck-controller"

// Reconciler is the MachineHealthCheck controller.
type Reconciler struct {
	// Deps: APIReader lists external remediation requests, whose kinds are not cached.
	reconciler.Deps
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinehealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinehealthchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// External remediation reads the template and lists, creates and deletes request objects of kinds
// only the user knows; no marker can name them. Grant the manager's service account get on the
// template kind and get, list, create and delete on the request kind (see doc.go).

// SetupWithManager watches health checks, the Machines they select and those Machines' Nodes.
// It looks Machines up by Node name through index.MachineByNodeName, which the manager registers.
// guard defers a reconcile until the cache shows the earlier ones' writes (made through a client
// of guard's package, see manager.New): the verdicts on Machines and the check's status, so that
// no remediation is started twice or beyond maxInFlight from a stale copy.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinehealthcheck").
		For(&v1beta1.MachineHealthCheck{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1beta1.Machine{}, r.machineEvents()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.checksOfNode), builder.WithPredicates(nodeHealthChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile runs one health check: it selects its Machines, judges them, remediates the unhealthy
// ones the limits allow, and writes the verdicts (on each Machine) and the counts (in its status).
// It requeues when the first pending timeout of a target expires.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	mhc := &v1beta1.MachineHealthCheck{}
	if ok, err := steps.Load(ctx, r.Client, req, mhc, func() { forgetCheck(req.NamespacedName) }); !ok {
		return ctrl.Result{}, err
	}

	s := &scope{mhc: mhc, now: r.Clock.Now(), external: mhc.Spec.RemediationTemplate != nil}
	defer func() {
		res, retErr = write.RequeueOnConflict(res, errors.Join(retErr, r.writeStatus(ctx, s)))
	}()
	return steps.Pipeline(ctx, s,
		r.selectTargets,
		r.loadRemediation,
		r.evaluate,
		r.remediate,
	)
}

// evaluate judges the targets (pure; see evaluate.go). A spec it cannot evaluate is terminal until
// the user changes it. When the check leaves its short-circuit in this pass, the targets are
// judged again with their timeouts counted from now (see resumeOf).
func (r *Reconciler) evaluate(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	resumedAt, shortCircuited := resumeOf(s.mhc)
	ev, err := evaluate(&s.mhc.Spec, s.targets, s.external, resumedAt, s.now)
	if err == nil && ev.allowed && shortCircuited {
		resumedAt = s.now
		log.FromContext(ctx).Info("remediation resumes after the short-circuit; targets failing since before now are remediated only if still failing a full timeout from now",
			"targets", ev.total, "failing", ev.failing())
		ev, err = evaluate(&s.mhc.Spec, s.targets, s.external, resumedAt, s.now)
	}
	if err != nil {
		s.invalid = err
		return ctrl.Result{}, false, reconcile.TerminalError(fmt.Errorf("health check %s: %w", client.ObjectKeyFromObject(s.mhc), err))
	}
	ev.noteResumed(resumedAt)
	s.eval = ev
	log.FromContext(ctx).V(1).Info("evaluated", "targets", ev.total, "healthy", ev.healthy, "unhealthy", ev.unhealthy,
		"suspect", ev.suspect, "inFlight", ev.inFlight, "starting", ev.started, "allowed", ev.allowed,
		"retriesExhausted", len(ev.exhausted), "requeueAfter", ev.requeueAfter)
	return ctrl.Result{RequeueAfter: ev.requeueAfter}, true, nil
}

// writeStatus writes the status computed from s with one server-side apply, or nothing if it did
// not change, and warns with an event when remediation has just been stopped (or its counts
// changed). The controller owns the whole status of a check; the write cannot conflict (see
// package write).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.eval == nil && s.invalid == nil {
		return nil // the reconcile failed before it learned anything
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.mhc.Status) {
		return nil
	}
	ac, err := statusApply(s.mhc, status)
	if err != nil {
		return err
	}
	updated, err := write.Status(ctx, r.Client, ac, FieldOwner, &v1beta1.MachineHealthCheck{})
	if err != nil {
		return fmt.Errorf("writing the status of health check %s: %w", client.ObjectKeyFromObject(s.mhc), err)
	}
	if updated != nil {
		r.warnIfStopped(s.mhc, updated)
	}
	return nil
}

// warnIfStopped emits the check's Warning events, once per change rather than once per reconcile:
// RemediationNotAllowed when remediation stops (or the reason changes) and again each time the
// number of failing targets changes while it is stopped (not when a suspect target merely turns
// unhealthy); RetriesExhausted when the Machines kept for inspection change.
func (r *Reconciler) warnIfStopped(before, after *v1beta1.MachineHealthCheck) {
	if now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.RemediationAllowedCondition); now != nil && now.Status == metav1.ConditionFalse {
		was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.RemediationAllowedCondition)
		if was == nil || was.Status != now.Status || was.Reason != now.Reason || failingCount(was.Message) != failingCount(now.Message) {
			reason := EventRemediationNotAllowed
			if now.Reason == ReasonInvalidSpec {
				reason = ReasonInvalidSpec
			}
			r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, reason, "Remediate", "%s", now.Message)
		}
	}
	if now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.RetriesExhaustedCondition); now != nil && now.Status == metav1.ConditionTrue {
		was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.RetriesExhaustedCondition)
		if was == nil || was.Status != now.Status || was.Message != now.Message {
			r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, EventRetriesExhausted, "Remediate", "%s", now.Message)
		}
	}
}

// failingCount is the head of a RemediationAllowed message, "6 of 10 targets failing" (see
// evaluation.counts), which changes only when a target starts or stops failing or the number of
// targets changes; the whole message when it has no such head (an invalid spec).
func failingCount(msg string) string {
	head, _, _ := strings.Cut(msg, " (")
	return head
}
