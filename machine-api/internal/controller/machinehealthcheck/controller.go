package machinehealthcheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Requeue intervals.
const (
	// templateRetry is how long to wait before reading a missing or unusable remediation template
	// again (it is not watched: its kind is the user's).
	templateRetry = 30 * time.Second
	// conflictRetry is how long to wait before evaluating again after a write met a conflict.
	conflictRetry = time.Second
)

// Reconciler is the MachineHealthCheck controller.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server; it lists external remediation requests, whose kinds
	// are not cached.
	APIReader client.Reader
	// Recorder emits events on health checks and Machines.
	Recorder events.EventRecorder
	// Clock is the time source.
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of health checks reconciled in parallel.
	MaxConcurrentReconciles int

	deletions pendingDeletions // Machines deleted, until the cache shows it
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinehealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinehealthchecks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// External remediation reads the template and lists, creates and deletes request objects of kinds
// only the user knows; no marker can name them. Grant the manager's service account get on the
// template kind and get, list, create and delete on the request kind (see doc.go).

// SetupWithManager watches health checks, the Machines they select and those Machines' Nodes.
// It looks Machines up by Node name through the machine controller's index
// (machine.IndexNodeName), which must be registered first.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinehealthcheck").
		For(&v1beta1.MachineHealthCheck{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1beta1.Machine{}, r.machineEvents()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.checksOfNode), builder.WithPredicates(nodeHealthChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile runs one health check: it selects its Machines, judges them, remediates the unhealthy
// ones the limits allow, and writes the verdicts (on each Machine) and the counts (in its status).
// It requeues when the first pending timeout of a target expires.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ ctrl.Result, retErr error) {
	mhc := &v1beta1.MachineHealthCheck{}
	if err := r.Client.Get(ctx, req.NamespacedName, mhc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if v1beta1.IsPaused(mhc.Annotations) {
		log.FromContext(ctx).V(1).Info("health check is paused; doing nothing", "annotation", v1beta1.PausedAnnotation)
		return ctrl.Result{}, nil
	}

	s := &scope{mhc: mhc, now: r.Clock.Now(), external: mhc.Spec.RemediationTemplate != nil}
	defer func() {
		retErr = errors.Join(retErr, r.writeStatus(ctx, s))
	}()
	return runSteps(ctx, s,
		r.selectTargets,
		r.loadRemediation,
		r.evaluate,
		r.remediate,
	)
}

// step is one stage of a reconcile. It returns done=false to stop the stages after it.
type step func(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error)

// runSteps runs steps in order until one is not done or fails; the soonest requeue wins.
func runSteps(ctx context.Context, s *scope, steps ...step) (ctrl.Result, error) {
	var out ctrl.Result
	for _, st := range steps {
		res, done, err := st(ctx, s)
		out.RequeueAfter = soonest(out.RequeueAfter, res.RequeueAfter)
		if err != nil || !done {
			return out, err
		}
	}
	return out, nil
}

// evaluate judges the targets (pure; see evaluate.go). A spec it cannot evaluate is terminal until
// the user changes it.
func (r *Reconciler) evaluate(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	ev, err := evaluate(&s.mhc.Spec, s.targets, s.external, s.now)
	if err != nil {
		s.invalid = err
		return ctrl.Result{}, false, reconcile.TerminalError(fmt.Errorf("health check %s: %w", client.ObjectKeyFromObject(s.mhc), err))
	}
	s.eval = ev
	log.FromContext(ctx).V(1).Info("evaluated", "targets", ev.total, "healthy", ev.healthy, "unhealthy", ev.unhealthy,
		"inFlight", ev.inFlight, "starting", ev.started, "allowed", ev.allowed, "requeueAfter", ev.requeueAfter)
	return ctrl.Result{RequeueAfter: ev.requeueAfter}, true, nil
}

// writeStatus writes the status computed from s with one patch, or nothing if it did not change,
// and warns with an event when remediation has just been stopped (or its counts changed).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.eval == nil && s.invalid == nil {
		return nil // the reconcile failed before it learned anything
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.mhc.Status) {
		return nil
	}
	before := s.mhc.DeepCopy()
	updated := s.mhc.DeepCopy()
	updated.Status = status
	err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		r.warnIfStopped(before, updated)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// Changed since read, perhaps only in labels, which no event brings back.
		return fmt.Errorf("writing the status of health check %s: %w", client.ObjectKeyFromObject(s.mhc), err)
	default:
		return fmt.Errorf("writing the status of health check %s: %w", client.ObjectKeyFromObject(s.mhc), err)
	}
}

func (r *Reconciler) warnIfStopped(before, after *v1beta1.MachineHealthCheck) {
	now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.RemediationAllowedCondition)
	if now == nil || now.Status != metav1.ConditionFalse {
		return
	}
	was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.RemediationAllowedCondition)
	if was != nil && was.Status == now.Status && was.Message == now.Message {
		return
	}
	reason := EventRemediationNotAllowed
	if now.Reason == ReasonInvalidSpec {
		reason = ReasonInvalidSpec
	}
	r.Recorder.Eventf(after, nil, corev1.EventTypeWarning, reason, "Remediate", "%s", now.Message)
}
