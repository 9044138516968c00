package capacity

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	acv1beta1 "machineapi.dev/machine-api/applyconfiguration/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// FieldOwner is the server-side apply field manager of the capacity annotations: the API server
// records under it which of them the controller wrote.
const FieldOwner = "capacity-controller"

// EventCapacityAnnotationsUpdated is the reason of the Normal event recorded when the capacity
// annotations of an object change.
const EventCapacityAnnotationsUpdated = "CapacityAnnotationsUpdated"

// Reconciler keeps the capacity annotations of one kind, MachineSets (ForMachineSets) or
// MachineDeployments (ForMachineDeployments).
type Reconciler[T client.Object] struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server: the managed fields the cache strips, for the migration
	// of an object an earlier version wrote. SetupWithManager sets the manager's; nil: Client.
	APIReader client.Reader
	// Recorder emits events on the objects.
	Recorder events.EventRecorder

	name     string
	index    string
	newObj   func() T
	newList  func() client.ObjectList
	template func(T) *v1beta1.MachineTemplateSpec
	// apply returns the apply configuration of obj's kind holding exactly annotations, with obj's
	// UID as a precondition (an object re-created under the same name is not written).
	apply func(obj T, annotations map[string]string) runtime.ApplyConfiguration
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
		apply: func(s *v1beta1.MachineSet, annotations map[string]string) runtime.ApplyConfiguration {
			return acv1beta1.MachineSet(s.Name, s.Namespace).WithUID(s.UID).WithAnnotations(annotations)
		},
	}
}

// ForMachineDeployments returns the reconciler of MachineDeployments' capacity annotations.
func ForMachineDeployments(c client.Client, rec events.EventRecorder) *Reconciler[*v1beta1.MachineDeployment] {
	return &Reconciler[*v1beta1.MachineDeployment]{
		Client: c, Recorder: rec, name: "machinedeployment-capacity", index: index.MachineDeploymentByClass,
		newObj:   func() *v1beta1.MachineDeployment { return &v1beta1.MachineDeployment{} },
		newList:  func() client.ObjectList { return &v1beta1.MachineDeploymentList{} },
		template: func(d *v1beta1.MachineDeployment) *v1beta1.MachineTemplateSpec { return &d.Spec.Template },
		apply: func(d *v1beta1.MachineDeployment, annotations map[string]string) runtime.ApplyConfiguration {
			return acv1beta1.MachineDeployment(d.Name, d.Namespace).WithUID(d.UID).WithAnnotations(annotations)
		},
	}
}

// SetupWithManager watches the objects (their spec and annotations) and MachineClasses, which it
// maps to the objects using them through the class index the manager registers. guard defers a
// reconcile until the cache shows the earlier ones' writes (made through a client of guard's
// package, see manager.New).
func (r *Reconciler[T]) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.name).
		For(r.newObj(), builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1beta1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.usersOf)).
		Complete(guard.Reconciler(r))
}

// Reconcile brings the object's capacity annotations in line with its MachineClass's nodeTemplate.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.newObj()
	if ok, err := steps.Load(ctx, r.Client, req, obj, nil); !ok {
		return reconcile.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		return reconcile.Result{}, nil
	}
	nt, class, err := r.nodeTemplate(ctx, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	want := fromNodeTemplate(nt)
	if settled(obj.GetAnnotations(), want) {
		return reconcile.Result{}, nil
	}
	if _, old := obj.GetAnnotations()[recordAnnotation]; old {
		if err := r.migrate(ctx, req); err != nil {
			return write.RequeueOnConflict(reconcile.Result{}, client.IgnoreNotFound(err))
		}
	}
	after, left, err := r.applyAnnotations(ctx, obj, want)
	if err != nil {
		return write.RequeueOnConflict(reconcile.Result{}, client.IgnoreNotFound(
			fmt.Errorf("applying the capacity annotations of %s: %w", req.NamespacedName, err)))
	}
	done := compare(obj.GetAnnotations(), after, left, class)
	switch {
	case done.changed():
		log.FromContext(ctx).Info("updated the cluster-autoscaler's capacity annotations", "change", done.String())
		r.Recorder.Eventf(obj, nil, "Normal", EventCapacityAnnotationsUpdated, "UpdateCapacity", "%s", done)
	case len(left) > 0:
		log.FromContext(ctx).V(1).Info("capacity annotations up to date", "change", done.String())
	}
	return reconcile.Result{}, nil
}

// applyAnnotations applies want under FieldOwner, without forcing: the API server answers with a
// conflict naming the capacity annotations another field manager owns with another value (set by
// hand); those are left out and the rest applied again. It returns the object's annotations as
// stored and the keys left alone, each with its owner. Annotations the controller applied before
// and leaves out now are removed by the API server when it is their only owner.
func (r *Reconciler[T]) applyAnnotations(ctx context.Context, obj T, want map[string]string) (map[string]string, map[string]string, error) {
	left := map[string]string{}
	for {
		// A new apply configuration each time: the client decodes the answer, the whole object, into it.
		ac := r.apply(obj, without(want, left))
		err := r.Client.Apply(ctx, ac, client.FieldOwner(FieldOwner))
		if err == nil {
			after, err := annotationsOf(ac)
			return after, left, err
		}
		owners, ok := conflicts(err)
		if !ok {
			return nil, nil, err
		}
		for k, owner := range owners {
			if _, again := left[k]; again {
				return nil, nil, err // cannot happen: a key left out conflicts no more
			}
			left[k] = owner
		}
	}
}

// migrate takes over, once, the annotations the record of an earlier version names as the
// controller's (see takeOver), and removes the record: one merge patch of the annotations and the
// managed fields, read from the API server (the cache strips them) and guarded by the
// resourceVersion read.
func (r *Reconciler[T]) migrate(ctx context.Context, req reconcile.Request) error {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	live := r.newObj()
	if err := reader.Get(ctx, req.NamespacedName, live); err != nil {
		return fmt.Errorf("reading %s for the migration of its capacity annotations: %w", req.NamespacedName, err)
	}
	managed, ours, ok, err := takeOver(live.GetAnnotations(), live.GetManagedFields(), FieldOwner, metav1.Now())
	switch {
	case err != nil:
		return fmt.Errorf("taking over the capacity annotations of %s: %w", req.NamespacedName, err)
	case !ok:
		return nil // already done; the cache is behind
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": live.GetResourceVersion(),
		"annotations":     map[string]any{recordAnnotation: nil},
		"managedFields":   managed,
	}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, live, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("taking over the capacity annotations of %s: %w", req.NamespacedName, err)
	}
	log.FromContext(ctx).Info("took over the capacity annotations an earlier version recorded, and removed its record",
		"annotations", ours)
	return nil
}

// annotationsOf returns the annotations of the object an apply configuration holds.
func annotationsOf(ac runtime.ApplyConfiguration) (map[string]string, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, fmt.Errorf("reading the answer to an apply: %w", err)
	}
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("reading the answer to an apply: %w", err)
	}
	return obj.Annotations, nil
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
