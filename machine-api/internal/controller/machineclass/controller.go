package machineclass

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// Reconciler keeps the in-use finalizer of MachineClasses.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machineclasses,verbs=get;list;watch;update;patch

// SetupWithManager watches MachineClasses and the Machines that refer to them. It finds a class's
// Machines through index.MachineByClass, which the manager registers. guard defers a reconcile
// until the cache shows the earlier ones' writes (made through a client of guard's package, see
// manager.New).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machineclass").
		For(&v1beta1.MachineClass{}).
		Watches(&v1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if ref := o.(*v1beta1.Machine).Spec.ProviderSpec.MachineClass; ref != nil {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
			}
			return nil
		})).
		Complete(guard.Reconciler(r))
}

// Reconcile adds the finalizer to a class in use and removes it from a class nobody uses.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	class := &v1beta1.MachineClass{}
	if ok, err := steps.Load(ctx, r.Client, req, class, nil); !ok {
		return reconcile.Result{}, err
	}
	users, err := r.users(ctx, class)
	if err != nil {
		return reconcile.Result{}, err
	}
	inUse := len(users) > 0
	has := controllerutil.ContainsFinalizer(class, v1beta1.MachineClassFinalizer)
	if inUse && !class.DeletionTimestamp.IsZero() {
		r.Recorder.Eventf(class, nil, "Warning", "InUse", "Delete",
			"MachineClass is still used by %d machine(s) (%s); it is deleted once none refers to it", len(users), preview(users))
	}
	if inUse == has || (inUse && !class.DeletionTimestamp.IsZero()) {
		return reconcile.Result{}, nil
	}
	before := class.DeepCopy()
	if inUse {
		controllerutil.AddFinalizer(class, v1beta1.MachineClassFinalizer)
	} else {
		controllerutil.RemoveFinalizer(class, v1beta1.MachineClassFinalizer)
	}
	if err := r.Client.Patch(ctx, class, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		// A conflict (the class changed since it was read) is retried soon, without an error.
		return write.RequeueOnConflict(reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("updating the finalizer of MachineClass %s: %w", req.NamespacedName, err)))
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) users(ctx context.Context, class *v1beta1.MachineClass) ([]string, error) {
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(class.Namespace), client.MatchingFields{index.MachineByClass: class.Name}); err != nil {
		return nil, fmt.Errorf("listing the machines of MachineClass %s/%s: %w", class.Namespace, class.Name, err)
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names) // the same message, in the same order, on every reconcile
	return names, nil
}

func preview(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
