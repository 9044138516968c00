package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/reconcile/write"
)

// EventCapacityAnnotationsUpdated is the reason of the Normal event recorded when the capacity
// annotations of an object change.
const EventCapacityAnnotationsUpdated = "CapacityAnnotationsUpdated"

// Reconciler keeps the capacity annotations of one kind, MachineSets (ForMachineSets) or
// MachineDeployments (ForMachineDeployments).
type Reconciler[T client.Object] struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder emits events on the objects.
	Recorder events.EventRecorder

	name     string
	index    string
	newObj   func() T
	newList  func() client.ObjectList
	template func(T) *v1beta1.MachineTemplateSpec
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets;machinedeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machineclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ForMachineSets returns the reconciler of MachineSets' capacity annotations.
func ForMachineSets(c client.Client, rec events.EventRecorder) *Reconciler[*v1beta1.MachineSet] {
	return &Reconciler[*v1beta1.MachineSet]{
		Client: c, Recorder: rec, name: "machineset-capacity", index: index.MachineSetByClass,
		newObj:   func() *v1beta1.MachineSet { return &v1beta1.MachineSet{} },
		newList:  func() client.ObjectList { return &v1beta1.MachineSetList{} },
		template: func(s *v1beta1.MachineSet) *v1beta1.MachineTemplateSpec { return &s.Spec.Template },
	}
}

// ForMachineDeployments returns the reconciler of MachineDeployments' capacity annotations.
func ForMachineDeployments(c client.Client, rec events.EventRecorder) *Reconciler[*v1beta1.MachineDeployment] {
	return &Reconciler[*v1beta1.MachineDeployment]{
		Client: c, Recorder: rec, name: "machinedeployment-capacity", index: index.MachineDeploymentByClass,
		newObj:   func() *v1beta1.MachineDeployment { return &v1beta1.MachineDeployment{} },
		newList:  func() client.ObjectList { return &v1beta1.MachineDeploymentList{} },
		template: func(d *v1beta1.MachineDeployment) *v1beta1.MachineTemplateSpec { return &d.Spec.Template },
	}
}

// SetupWithManager watches the objects (their spec and annotations) and MachineClasses, which it
// maps to the objects using them through the class index the manager registers.
func (r *Reconciler[T]) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.name).
		For(r.newObj(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1beta1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.usersOf)).
		Complete(r)
}

// Reconcile brings the object's capacity annotations in line with its MachineClass's nodeTemplate.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.newObj()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if v1beta1.IsPaused(obj.GetAnnotations()) || !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	nt, class, err := r.nodeTemplate(ctx, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	c := plan(obj.GetAnnotations(), fromNodeTemplate(nt))
	if len(c.patch) == 0 {
		return reconcile.Result{}, nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": c.patch, "resourceVersion": obj.GetResourceVersion(),
	}})
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return write.RequeueOnConflict(reconcile.Result{}, client.IgnoreNotFound(
			fmt.Errorf("writing the capacity annotations of %s: %w", req.NamespacedName, err)))
	}
	if len(c.set)+len(c.removed) > 0 {
		msg := describe(c, class)
		log.FromContext(ctx).Info("updated the cluster-autoscaler's capacity annotations", "change", msg)
		r.Recorder.Eventf(obj, nil, "Normal", EventCapacityAnnotationsUpdated, "UpdateCapacity", msg)
	}
	return reconcile.Result{}, nil
}

// nodeTemplate returns the nodeTemplate of the MachineClass obj's template refers to and the
// class's name; nil when there is no class, it is missing or has no nodeTemplate.
func (r *Reconciler[T]) nodeTemplate(ctx context.Context, obj T) (*v1beta1.NodeTemplate, string, error) {
	ref := r.template(obj).Spec.ProviderSpec.MachineClass
	if ref == nil {
		return nil, "", nil
	}
	class := &v1beta1.MachineClass{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}, class)
	switch {
	case apierrors.IsNotFound(err):
		return nil, ref.Name, nil // its creation brings the object back
	case err != nil:
		return nil, ref.Name, fmt.Errorf("getting MachineClass %s/%s: %w", obj.GetNamespace(), ref.Name, err)
	}
	return class.Spec.NodeTemplate, ref.Name, nil
}

// usersOf maps a MachineClass to the objects whose template refers to it.
func (r *Reconciler[T]) usersOf(ctx context.Context, class client.Object) []reconcile.Request {
	list := r.newList()
	if err := r.Client.List(ctx, list, client.InNamespace(class.GetNamespace()), client.MatchingFields{r.index: class.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing the users of a MachineClass", "class", client.ObjectKeyFromObject(class))
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o.(client.Object))})
		return nil
	})
	return reqs
}

// describe says what a change did, for the event and the log.
func describe(c change, class string) string {
	var parts []string
	if len(c.set) > 0 {
		parts = append(parts, fmt.Sprintf("set %s from the nodeTemplate of MachineClass %s", strings.Join(c.set, ", "), class))
	}
	if len(c.removed) > 0 {
		parts = append(parts, "removed "+strings.Join(c.removed, ", ")+" (no nodeTemplate value for them)")
	}
	if len(c.kept) > 0 {
		parts = append(parts, "left "+strings.Join(c.kept, ", ")+" as set by someone else")
	}
	return strings.Join(parts, "; ")
}
