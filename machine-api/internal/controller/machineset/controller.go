package machineset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// FieldOwner is the server-side apply field manager of the MachineSet controller's status writes.
const FieldOwner = "machineset-controller"

// Reconciler is the MachineSet controller.
type Reconciler struct {
	// Deps: APIReader reads whether a create whose outcome is unknown was stored, and the marks
	// and pods of the Machines a set is about to delete.
	reconciler.Deps
	// MachineSelector, when set, is the manager's Machine selector: only sets whose template
	// labels match it are reconciled, since the cache would not show the Machines of the others
	// (and a set that cannot see its Machines would create them forever).
	MachineSelector labels.Selector

	// inLine are the Machines syncMetadata found in line with their set's template (see
	// uptodate.Checked).
	inLine  uptodate.Checked
	budgets budgetGate // see disruption.go
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager watches MachineSets and Machines: those a set controls, and orphans its
// selector may adopt. It finds a set's Machines through index.MachineBySet, which the manager
// registers. guard defers a reconcile until the cache shows the earlier ones' writes (made through
// a client of guard's package, see manager.New): the Machines a set created, adopted, released or
// deleted, and its own status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineset").
		For(&v1beta1.MachineSet{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
			predicate.NewPredicateFuncs(r.inScope))).
		Owns(&v1beta1.Machine{}, builder.WithPredicates(machineChanged())).
		Watches(&v1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.setsAdopting), builder.WithPredicates(orphan())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile keeps one MachineSet's Machines: it claims the Machines its selector matches, deletes
// them all when the set is deleted, and otherwise propagates template metadata in place and
// creates or deletes Machines until spec.replicas are there. Status is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	set := &v1beta1.MachineSet{}
	if ok, err := steps.Load(ctx, r.Client, req, set, func() { r.inLine.Forget(req.NamespacedName) }); !ok {
		return ctrl.Result{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector.AsLabelSelector())
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("spec.selector of MachineSet %s is invalid, fix it: %w", req.NamespacedName, err))
	}
	if set.DeletionTimestamp.IsZero() {
		if err := write.AddFinalizer(ctx, r.Client, set, v1beta1.MachineSetFinalizer); err != nil {
			return write.RequeueOnConflict(ctrl.Result{}, client.IgnoreNotFound(err))
		}
	}

	s := &scope{set: set, selector: selector, now: r.Clock.Now()}
	defer func() {
		// Counted once, after the steps: the status and the requeue for availability both read it,
		// and at thousands of Machines the count is a visible share of the controller's work.
		c := count(s.active(), s.set, s.now)
		retErr = errors.Join(retErr, r.writeStatus(ctx, s, c))
		res, retErr = write.RequeueOnConflict(steps.Soonest(res, untilAvailable(s, c), ctrl.Result{RequeueAfter: untilDue(s)}), retErr)
	}()

	if res, done, err := r.claimMachines(ctx, s); err != nil || !done {
		return res, err
	}
	if !set.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return steps.Pipeline(ctx, s,
		r.readOwner,
		r.syncMetadata,
		r.updateInPlace,
		r.scale,
		r.remediateMachines,
		r.reportHolds,
	)
}

// untilAvailable asks to come back when the next ready Machine becomes available: no event says
// so, and availableReplicas must then go up.
func untilAvailable(s *scope, c counts) ctrl.Result {
	if s.finalizerRemoved {
		return ctrl.Result{}
	}
	if next := c.nextAvailable; next > 0 {
		return ctrl.Result{RequeueAfter: next + time.Second/10} // past the instant, so the Machine counts
	}
	return ctrl.Result{}
}

// writeStatus writes the status computed from s and the count of its Machines c with one
// server-side apply, or nothing if it did not change. The set controller owns the whole status; the
// write cannot conflict (see package write), and the next reconcile runs once the cache shows it.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope, c counts) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s, c)
	if equality.Semantic.DeepEqual(status, s.set.Status) {
		return nil
	}
	updated, err := write.Status(ctx, r.Client, statusApply(s.set, status), FieldOwner, &v1beta1.MachineSet{})
	if err != nil {
		return fmt.Errorf("writing the status of MachineSet %s/%s: %w", s.set.Namespace, s.set.Name, err)
	}
	if updated != nil {
		r.emitTransitionEvents(s.set, updated)
	}
	return nil
}

// emitTransitionEvents records a Warning when the set freezes, leaves its autoscaler bounds or
// finds Machines stuck at launch.
func (r *Reconciler) emitTransitionEvents(before, after *v1beta1.MachineSet) {
	for _, t := range []string{v1beta1.FrozenCondition, v1beta1.AutoscalerBoundsCondition, v1beta1.MachinesProvisionedCondition} {
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
