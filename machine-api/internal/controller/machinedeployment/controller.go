package machinedeployment

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/internal/reconciler"
	"machineapi.dev/machine-api/internal/uptodate"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// FieldOwner is the server-side apply field manager of the MachineDeployment controller's status
// writes.
const FieldOwner = "machinedeployment-controller"

// Reconciler is the MachineDeployment controller.
type Reconciler struct {
	// Deps: APIReader reads which Machines are marked for deletion when the deployment shrinks
	// (the cache may not show a mark made just before); Client when nil.
	reconciler.Deps
	// MachineSelector, when set, is the manager's Machine selector: only deployments whose
	// template labels match it are reconciled (the MachineSet controller skips the others' sets).
	MachineSelector labels.Selector

	// kept are the Machines of its current set findStale kept (see uptodate.Checked).
	kept uptodate.Checked
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machineclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager watches deployments, the sets they control, the MachineClasses their templates
// name (an edit may make Machines due for replacement) and the delete-machine mark of their
// Machines (which the deployment waits for before it scales a set down to replace them). It finds
// a deployment's sets through index.MachineSetByDeployment, the Machines of its current set through
// index.MachineBySet and a class's deployments through index.MachineDeploymentByClass, which the
// manager registers. guard defers a reconcile until the cache shows the earlier ones' writes (made
// through a client of guard's package, see manager.New): the sets a deployment created, scaled
// or deleted, the Machines it marked, and its own status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machinedeployment").
		For(&v1beta1.MachineDeployment{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
			predicate.NewPredicateFuncs(r.inScope))).
		Owns(&v1beta1.MachineSet{}).
		Watches(&v1beta1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.deploymentsOfClass),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(deploymentOfMachine),
			builder.WithPredicates(markChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile moves one MachineDeployment one step towards its spec: it finds its MachineSets, deletes
// them all when it is deleted, and otherwise waits until the sets show its earlier writes, updates
// their in-place fields, records the revision, finds the Machines of its current set it replaces
// (spec.rollout, an edited MachineClass), scales or rolls out by its strategy and prunes old empty
// sets. Status is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	md := &v1beta1.MachineDeployment{}
	if ok, err := steps.Load(ctx, r.Client, req, md, func() { r.kept.Forget(req.NamespacedName) }); !ok {
		return ctrl.Result{}, err
	}
	if md.DeletionTimestamp.IsZero() {
		if err := write.AddFinalizer(ctx, r.Client, md, v1beta1.MachineDeploymentFinalizer); err != nil {
			return write.RequeueOnConflict(ctrl.Result{}, client.IgnoreNotFound(err))
		}
	}

	s := &scope{md: md, now: r.Clock.Now()}
	defer func() {
		deadline, err := r.writeStatus(ctx, s)
		res, retErr = write.RequeueOnConflict(steps.Soonest(res, deadline), errors.Join(retErr, err))
	}()

	if res, done, err := r.listSets(ctx, s); err != nil || !done {
		return res, err
	}
	if !md.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return steps.Pipeline(ctx, s,
		r.findStale, // first, so that the status never calls a rollout complete while Machines wait to be replaced
		r.waitForSets,
		r.syncAutoscalerKeys,
		r.syncMetadata,
		r.syncRevision,
		r.updateInPlace,
		r.rollout,
		r.pruneHistory,
	)
}

// writeStatus writes the status computed from s with one server-side apply, or nothing if it did
// not change, and returns a requeue for when the progress deadline passes. The deployment
// controller owns the whole status; the write cannot conflict (see package write), and the next
// reconcile runs once the cache shows it.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.finalizerRemoved {
		return ctrl.Result{}, nil
	}
	status := computeStatus(s)
	deadline := ctrl.Result{RequeueAfter: untilDeadline(s.md, status, s.now)}
	if equality.Semantic.DeepEqual(status, s.md.Status) {
		return deadline, nil
	}
	ac, err := statusApply(s.md, status)
	if err != nil {
		return deadline, err
	}
	updated, err := write.Status(ctx, r.Client, ac, FieldOwner, &v1beta1.MachineDeployment{})
	if err != nil {
		return deadline, fmt.Errorf("writing the status of MachineDeployment %s/%s: %w", s.md.Namespace, s.md.Name, err)
	}
	if updated != nil {
		r.emitTransitionEvents(s.md, updated)
	}
	return deadline, nil
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
	wasB := meta.FindStatusCondition(before.Status.Conditions, v1beta1.AutoscalerBoundsCondition)
	nowB := meta.FindStatusCondition(after.Status.Conditions, v1beta1.AutoscalerBoundsCondition)
	if nowB != nil && nowB.Status == metav1.ConditionFalse && (wasB == nil || wasB.Reason != nowB.Reason) {
		r.Recorder.Eventf(after, nil, "Warning", nowB.Reason, "Scale", nowB.Message)
	}
}

// deploymentsOfClass maps a MachineClass to the deployments whose template names it.
func (r *Reconciler) deploymentsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1beta1.MachineDeploymentList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.MachineDeploymentByClass: o.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing the MachineDeployments of a MachineClass", "machineClass", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// deploymentOfMachine maps a Machine to the deployment its deployment-name label names.
func deploymentOfMachine(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[v1beta1.DeploymentNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// planOf is what the deployment reads of a Machine's in-place plan (see updateInPlace).
func planOf(m *v1beta1.Machine) []string {
	rec := m.Status.InPlaceUpdate
	if rec == nil {
		return nil
	}
	return append([]string{rec.TemplateHash}, rec.Unsupported...)
}

// markChanged passes the Machine updates that add or remove the delete-machine annotation, and
// those that change its in-place plan (status.inPlaceUpdate: a deployment may wait for them).
func markChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld.GetAnnotations()[v1beta1.DeleteMachineAnnotation] != e.ObjectNew.GetAnnotations()[v1beta1.DeleteMachineAnnotation] {
				return true
			}
			a, okA := e.ObjectOld.(*v1beta1.Machine)
			b, okB := e.ObjectNew.(*v1beta1.Machine)
			return okA && okB && !equality.Semantic.DeepEqual(planOf(a), planOf(b))
		},
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
