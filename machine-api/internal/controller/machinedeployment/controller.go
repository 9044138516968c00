package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/controller/machineset"
)

// IndexSetController indexes MachineSets by the UID of their controlling MachineDeployment.
const IndexSetController = "machinedeployment.machineset.controllerUID"

// conflictRetry is how soon a deployment whose status write conflicted is reconciled again.
const conflictRetry = 200 * time.Millisecond

// Reconciler is the MachineDeployment controller.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder emits events on MachineDeployments.
	Recorder events.EventRecorder
	// Clock is the time source.
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of MachineDeployments reconciled in parallel.
	MaxConcurrentReconciles int
	// MachineSelector, when set, is the manager's Machine selector: only deployments whose
	// template labels match it are reconciled (the MachineSet controller skips the others' sets).
	MachineSelector labels.Selector

	expectations *expectations
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the MachineSet index and watches deployments and the sets they control.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.expectations = newExpectations(r.Clock)
	err := mgr.GetFieldIndexer().IndexField(ctx, &v1beta1.MachineSet{}, IndexSetController, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "MachineDeployment" && ref.APIVersion == v1beta1.GroupVersion.String() {
			return []string{string(ref.UID)}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing MachineSets by controlling MachineDeployment: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedeployment").
		For(&v1beta1.MachineDeployment{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
			predicate.NewPredicateFuncs(r.inScope))).
		Owns(&v1beta1.MachineSet{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile moves one MachineDeployment one step towards its spec: it finds its MachineSets, deletes
// them all when it is deleted, and otherwise waits until the sets show its earlier writes, updates
// their metadata in place, records the revision, scales or rolls out by its strategy and prunes
// old empty sets. Status is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	md := &v1beta1.MachineDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, md); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.reset(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if v1beta1.IsPaused(md.Annotations) {
		log.FromContext(ctx).V(1).Info("machinedeployment is paused; leaving it alone", "annotation", v1beta1.PausedAnnotation)
		return ctrl.Result{}, nil
	}
	if md.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(md, v1beta1.MachineDeploymentFinalizer) {
		if err := r.addFinalizer(ctx, md); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	s := &scope{md: md, now: r.Clock.Now()}
	defer func() {
		retErr = errors.Join(retErr, r.writeStatus(ctx, s, &res))
	}()

	if res, done, err := r.listSets(ctx, s); err != nil || !done {
		return res, err
	}
	if !md.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return runSteps(ctx, s,
		r.waitForSets,
		r.syncMetadata,
		r.syncRevision,
		r.rollout,
		r.pruneHistory,
	)
}

// step is one stage of a reconcile. It returns done=false to stop the stages after it.
type step func(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error)

func runSteps(ctx context.Context, s *scope, steps ...step) (ctrl.Result, error) {
	for _, st := range steps {
		res, done, err := st(ctx, s)
		if err != nil || !done {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// writeStatus writes the status computed from s with one patch, or nothing if it did not change,
// and makes res requeue when the progress deadline would pass.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, res *ctrl.Result) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s)
	if d := untilDeadline(s.md, status, s.now); d > 0 && (res.RequeueAfter == 0 || d < res.RequeueAfter) {
		res.RequeueAfter = d
	}
	if equality.Semantic.DeepEqual(status, s.md.Status) {
		return nil
	}
	before := s.md.DeepCopy()
	updated := s.md.DeepCopy()
	updated.Status = status
	err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		r.emitTransitionEvents(before, updated)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The cache had not caught up with our previous write (whose event the predicates drop),
		// or someone changed the deployment: look again soon.
		*res = ctrl.Result{RequeueAfter: conflictRetry}
		return nil
	default:
		return fmt.Errorf("writing the status of MachineDeployment %s/%s: %w", s.md.Namespace, s.md.Name, err)
	}
}

// emitTransitionEvents records a Warning when the rollout misses its deadline or replicas leave the
// autoscaler bounds, and a Normal event when a rollout completes.
func (r *Reconciler) emitTransitionEvents(before, after *v1beta1.MachineDeployment) {
	was := meta.FindStatusCondition(before.Status.Conditions, v1beta1.ProgressingCondition)
	now := meta.FindStatusCondition(after.Status.Conditions, v1beta1.ProgressingCondition)
	if now != nil && (was == nil || was.Reason != now.Reason) {
		switch now.Reason {
		case ReasonDeadlineExceeded, ReasonSetNameTaken:
			r.Recorder.Eventf(after, nil, "Warning", now.Reason, "Rollout", now.Message)
		case ReasonNewSetAvailable:
			r.Recorder.Eventf(after, nil, "Normal", now.Reason, "Rollout", now.Message)
		}
	}
	wasB := meta.FindStatusCondition(before.Status.Conditions, machineset.AutoscalerBoundsCondition)
	nowB := meta.FindStatusCondition(after.Status.Conditions, machineset.AutoscalerBoundsCondition)
	if nowB != nil && nowB.Status == metav1.ConditionFalse && (wasB == nil || wasB.Reason != nowB.Reason) {
		r.Recorder.Eventf(after, nil, "Warning", nowB.Reason, "Scale", nowB.Message)
	}
}

// inScope reports whether the deployment's Machines are visible to this manager (see MachineSelector).
func (r *Reconciler) inScope(o client.Object) bool {
	if r.MachineSelector == nil || r.MachineSelector.Empty() {
		return true
	}
	md, ok := o.(*v1beta1.MachineDeployment)
	return ok && r.MachineSelector.Matches(labels.Set(md.Spec.Template.Metadata.Labels))
}
