package machineset

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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// IndexMachineController indexes Machines by the UID of their controlling MachineSet, and
// Machines without any controller under noController (the candidates for adoption).
const IndexMachineController = "machineset.machine.controllerUID"

// noController is the IndexMachineController value of Machines no object controls.
const noController = "<none>"

// conflictRetry is how soon a set whose status write conflicted is reconciled again.
const conflictRetry = 200 * time.Millisecond

// Reconciler is the MachineSet controller.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: whether a create whose outcome is unknown was stored.
	APIReader client.Reader
	// Recorder emits events on MachineSets.
	Recorder events.EventRecorder
	// Clock is the time source.
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of MachineSets reconciled in parallel.
	MaxConcurrentReconciles int
	// MachineSelector, when set, is the manager's Machine selector: only sets whose template
	// labels match it are reconciled, since the cache would not show the Machines of the others
	// (and a set that cannot see its Machines would create them forever).
	MachineSelector labels.Selector

	expectations *expectations
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the Machine index and watches MachineSets and Machines: those a set
// controls, and orphans its selector may adopt.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.expectations = newExpectations(r.Clock)
	if err := IndexMachines(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineset").
		For(&v1beta1.MachineSet{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
			predicate.NewPredicateFuncs(r.inScope))).
		Owns(&v1beta1.Machine{}, builder.WithPredicates(machineChanged())).
		Watches(&v1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.setsAdopting), builder.WithPredicates(orphan())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// IndexMachines registers IndexMachineController.
func IndexMachines(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1beta1.Machine{}, IndexMachineController, func(o client.Object) []string {
		ref := metav1.GetControllerOf(o)
		switch {
		case ref == nil:
			return []string{noController}
		case ref.Kind == "MachineSet" && ref.APIVersion == v1beta1.GroupVersion.String():
			return []string{string(ref.UID)}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing Machines by controlling MachineSet: %w", err)
	}
	return nil
}

// Reconcile keeps one MachineSet's Machines: it claims the Machines its selector matches, deletes
// them all when the set is deleted, and otherwise propagates template metadata in place and
// creates or deletes Machines until spec.replicas are there. Status is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	set := &v1beta1.MachineSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.reset(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if v1beta1.IsPaused(set.Annotations) {
		log.FromContext(ctx).V(1).Info("machineset is paused; leaving it alone", "annotation", v1beta1.PausedAnnotation)
		return ctrl.Result{}, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector.AsLabelSelector())
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("spec.selector of MachineSet %s is invalid, fix it: %w", req.NamespacedName, err))
	}
	if set.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(set, v1beta1.MachineSetFinalizer) {
		if err := r.addFinalizer(ctx, set); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	s := &scope{set: set, selector: selector, now: r.Clock.Now()}
	defer func() {
		retErr = errors.Join(retErr, r.writeStatus(ctx, s, &res))
		res = soonest(res, s)
	}()

	if res, done, err := r.claimMachines(ctx, s); err != nil || !done {
		return res, err
	}
	if !set.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return runSteps(ctx, s,
		r.readOwner,
		r.syncMetadata,
		r.scale,
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

// soonest returns res, or a requeue for when the next ready Machine becomes available if that is
// sooner (availableReplicas must then go up without any event).
func soonest(res ctrl.Result, s *scope) ctrl.Result {
	if s.finalizerRemoved {
		return res
	}
	next := count(s.active(), s.set, s.now).nextAvailable
	if next > 0 && (res.RequeueAfter == 0 || next < res.RequeueAfter) {
		res.RequeueAfter = next + time.Second/10 // past the instant, so the Machine counts
	}
	return res
}

// writeStatus writes the status computed from s with one patch, or nothing if it did not change.
// On a conflict (the cache had not caught up with our previous write, or someone changed the set)
// it asks for a quick requeue: the set's own status writes raise no event that would bring it back.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, res *ctrl.Result) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.set.Status) {
		return nil
	}
	before := s.set.DeepCopy()
	updated := s.set.DeepCopy()
	updated.Status = status
	err := r.Client.Status().Patch(ctx, updated, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		r.emitTransitionEvents(before, updated)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		*res = ctrl.Result{RequeueAfter: conflictRetry}
		return nil
	default:
		return fmt.Errorf("writing the status of MachineSet %s/%s: %w", s.set.Namespace, s.set.Name, err)
	}
}

// emitTransitionEvents records a Warning when the set freezes or leaves its autoscaler bounds.
func (r *Reconciler) emitTransitionEvents(before, after *v1beta1.MachineSet) {
	for _, t := range []string{v1beta1.FrozenCondition, AutoscalerBoundsCondition} {
		was := meta.FindStatusCondition(before.Status.Conditions, t)
		now := meta.FindStatusCondition(after.Status.Conditions, t)
		bad := metav1.ConditionFalse
		if t == v1beta1.FrozenCondition {
			bad = metav1.ConditionTrue
		}
		if now != nil && now.Status == bad && (was == nil || was.Status != bad || was.Reason != now.Reason) {
			r.Recorder.Eventf(after, nil, "Warning", now.Reason, "Scale", now.Message)
		}
	}
}

// inScope reports whether the set's Machines are visible to this manager (see MachineSelector).
func (r *Reconciler) inScope(o client.Object) bool {
	if r.MachineSelector == nil || r.MachineSelector.Empty() {
		return true
	}
	set, ok := o.(*v1beta1.MachineSet)
	return ok && r.MachineSelector.Matches(labels.Set(set.Spec.Template.Metadata.Labels))
}
