package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/recent"
	"machineapi.dev/machine-api/provider"
)

// Requeue intervals.
const (
	drainPoll                  = 2 * time.Second
	volumePoll                 = 5 * time.Second
	instancePoll               = 5 * time.Second
	nodeDeletePoll             = 2 * time.Second
	classRetry                 = 30 * time.Second
	conflictRetry              = 200 * time.Millisecond
	defaultNodeDeletionTimeout = 10 * time.Second
)

// Field index names on Machines.
const (
	// IndexNodeName indexes Machines by status.nodeRef.name.
	IndexNodeName = "machine.status.nodeRef.name"
	// IndexMachineClass indexes Machines by spec.providerSpec.machineClass.name.
	IndexMachineClass = "machine.spec.providerSpec.machineClass.name"
)

// Reconciler is the Machine controller.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Provider creates and deletes instances.
	Provider provider.Provider
	// Drainer drains Nodes before their Machine goes away.
	Drainer *drain.Drainer
	// Recorder emits events on Machines.
	Recorder events.EventRecorder
	// Clock is the time source.
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of Machines reconciled in parallel.
	MaxConcurrentReconciles int

	// written lets a reconcile read this controller's own writes before the cache shows them.
	written recent.Writes
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machineclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the field indexes and starts watching Machines, their Nodes and
// their MachineClasses.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := IndexMachines(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine").
		For(&v1beta1.Machine{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfNode)).
		Watches(&v1beta1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfClass)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// IndexMachines registers the Machine field indexes this controller looks things up with.
func IndexMachines(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1beta1.Machine{}, IndexNodeName, func(o client.Object) []string {
		if ref := o.(*v1beta1.Machine).Status.NodeRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Machines by node name: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1beta1.Machine{}, IndexMachineClass, func(o client.Object) []string {
		if c := o.(*v1beta1.Machine).Spec.ProviderSpec.MachineClass; c != nil {
			return []string{c.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing Machines by MachineClass: %w", err)
	}
	return nil
}

// Reconcile moves one Machine towards its desired state. It reads like the life of a Machine:
// paused machines are left alone; deleting machines go through the delete pipeline; the others
// get the finalizer, then are provisioned and followed to Running. Status is written once, at the
// end, from what the steps observed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ ctrl.Result, retErr error) {
	m := &v1beta1.Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	m = r.written.Latest(m).(*v1beta1.Machine)
	if v1beta1.IsPaused(m.Annotations) {
		log.FromContext(ctx).V(1).Info("machine is paused; leaving it alone", "annotation", v1beta1.PausedAnnotation)
		return ctrl.Result{}, nil
	}
	if m.DeletionTimestamp.IsZero() && !hasFinalizer(m) {
		return ctrl.Result{}, r.addFinalizer(ctx, m) // the update event brings the Machine back
	}

	s := &scope{machine: m, now: r.Clock.Now()}
	defer func() {
		retErr = errors.Join(retErr, r.writeStatus(ctx, s))
	}()

	if !m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return runSteps(ctx, s,
		r.resolveClass,
		r.provision,
		r.observeNode,
	)
}

// step is one stage of a reconcile. It returns done=false to stop the stages after it (they wait
// for this one), with the result to requeue with.
type step func(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error)

// runSteps runs steps in order until one is not done or fails.
func runSteps(ctx context.Context, s *scope, steps ...step) (ctrl.Result, error) {
	for _, st := range steps {
		res, done, err := st(ctx, s)
		if err != nil || !done {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// writeStatus writes the status computed from s with one server-side apply of the fields this
// controller owns, or nothing if they did not change. Server-side apply merges the conditions list
// by type, so the node linker's and the health check's conditions are never overwritten and no
// resourceVersion precondition is needed: the write cannot fail on a concurrent writer (with a
// merge patch, the whole list is replaced, so every write needs an optimistic lock, and the node
// linker writing at the same moment made about two conflicts per machine at scale).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.machine.Status) {
		return nil
	}
	before := s.machine.DeepCopy()
	apply, err := ownedStatusApply(s.machine, status)
	if err != nil {
		return err
	}
	err = r.Client.Status().Patch(ctx, apply, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership)
	switch {
	case err == nil:
		updated := &v1beta1.Machine{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(apply.Object, updated); err == nil {
			r.written.Record(before.ResourceVersion, updated)
			r.emitTransitionEvents(before, updated)
		}
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("writing the status of machine %s: %w", client.ObjectKeyFromObject(s.machine), err)
	}
}

// FieldOwner is the server-side apply field manager of the machine controller's status writes.
const FieldOwner = "machine-controller"

// ownedConditions are the condition types the machine controller writes.
var ownedConditions = map[string]bool{
	v1beta1.ReadyCondition: true, v1beta1.InstanceProvisionedCondition: true,
	v1beta1.DrainedCondition: true, v1beta1.DeletingCondition: true,
}

// ownedStatusApply returns the apply configuration of the status fields the machine controller
// owns: everything but status.nodeRef and the conditions of other controllers.
func ownedStatusApply(m *v1beta1.Machine, status v1beta1.MachineStatus) (*unstructured.Unstructured, error) {
	owned := *status.DeepCopy()
	owned.NodeRef = nil
	owned.Conditions = nil
	for _, c := range status.Conditions {
		if ownedConditions[c.Type] {
			owned.Conditions = append(owned.Conditions, c)
		}
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&owned)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": st}}
	u.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("Machine"))
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	u.SetUID(m.UID) // the apply fails rather than act on a Machine re-created with the same name
	return u, nil
}

func hasFinalizer(m *v1beta1.Machine) bool {
	for _, f := range m.Finalizers {
		if f == v1beta1.MachineFinalizer {
			return true
		}
	}
	return false
}

func (r *Reconciler) addFinalizer(ctx context.Context, m *v1beta1.Machine) error {
	before := m.DeepCopy()
	m.Finalizers = append(m.Finalizers, v1beta1.MachineFinalizer)
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("adding the finalizer to machine %s: %w", client.ObjectKeyFromObject(m), err))
	}
	r.written.Record(before.ResourceVersion, m)
	return nil
}

// machinesOfNode maps a Node event to the Machines linked to it.
func (r *Reconciler) machinesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, IndexNodeName, o.GetName(), "")
}

// machinesOfClass maps a MachineClass event to the Machines using it.
func (r *Reconciler) machinesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, IndexMachineClass, o.GetName(), o.GetNamespace())
}

func (r *Reconciler) requestsFor(ctx context.Context, index, value, namespace string) []reconcile.Request {
	list := &v1beta1.MachineList{}
	opts := []client.ListOption{client.MatchingFields{index: value}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing machines by index", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
