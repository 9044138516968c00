package machine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"machineapi.dev/drain"
	"machineapi.dev/nodelink"
	"machineapi.dev/nodelink/consistency"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/index"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"
)

// Requeue intervals.
const (
	drainPoll                  = 2 * time.Second
	volumePoll                 = 5 * time.Second
	instancePoll               = 5 * time.Second
	nodeDeletePoll             = 2 * time.Second
	classRetry                 = 30 * time.Second
	defaultNodeDeletionTimeout = 10 * time.Second
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
	// Linker, when set, is the node linker of this process, built with this Reconciler as its
	// nodelink.LinkRecorder: for the Machines it handles, this controller records status.nodeRef
	// and NodeLinked in its own status write (link.go).
	Linker *nodelink.Linker[*v1beta1.Machine]

	// queue is the controller's work queue once it runs, for LinkChanged.
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machineclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedrainrules,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets;machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=list
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager starts watching Machines, their Nodes and their MachineClasses, the
// MachineSets and MachineDeployments whose template changes (UpToDate), and the MachineDrainRules
// of their namespace (a rule's change brings back the Machines of its namespace that are being
// deleted, so a drain follows it at once), and takes the node linker's LinkChanged calls. Machines
// on their way to Running that have an instance are queued ahead of new ones (queue.go). It looks Machines up through the field indexes of
// package index, which the manager registers. guard defers a reconcile until the cache shows the
// earlier ones' writes (made through a client of guard's package, see manager.New).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, guard *consistency.Guard) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("machine").
		For(&v1beta1.Machine{}).
		Watches(&v1beta1.Machine{}, prioritizeProgress()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfNode)).
		Watches(&v1beta1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfClass)).
		Watches(&v1beta1.MachineDrainRule{}, handler.EnqueueRequestsFromMapFunc(r.deletingMachinesOfNamespace)).
		Watches(&v1beta1.MachineSet{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfSet), builder.WithPredicates(desiredChanged())).
		Watches(&v1beta1.MachineDeployment{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfDeployment), builder.WithPredicates(desiredChanged())).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.queue.Store(&q) // LinkChanged enqueues from now on
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile moves one Machine towards its desired state. It reads like the life of a Machine:
// paused machines are left alone; deleting machines go through the delete pipeline; the others
// get the finalizer, then are provisioned and followed to Running. Status is written once, at the
// end, from what the steps observed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	m := &v1beta1.Machine{}
	if ok, err := steps.Load(ctx, r.Client, req, m, nil); !ok {
		return ctrl.Result{}, err
	}
	if m.DeletionTimestamp.IsZero() && !hasFinalizer(m) {
		err := write.AddFinalizer(ctx, r.Client, m, v1beta1.MachineFinalizer)
		return write.RequeueOnConflict(ctrl.Result{}, client.IgnoreNotFound(err)) // the update event brings the Machine back
	}

	s := &scope{machine: m, now: r.Clock.Now()}
	defer func() {
		res, retErr = write.RequeueOnConflict(res, errors.Join(retErr, r.writeStatus(ctx, s)))
	}()

	if !m.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return steps.Pipeline(ctx, s,
		r.link,
		r.resolveClass,
		r.upToDate,
		r.provision,
		r.observeNode,
		r.observeInterruption,
		r.updateInPlace,
	)
}

// FieldOwner is the server-side apply field manager of the machine controller's status writes.
const FieldOwner = "machine-controller"

// writeStatus writes the status computed from s with one server-side apply of the fields this
// controller owns (statusApply), or nothing if they did not change. The API server merges the
// conditions list by type, so the node linker's and the health check's conditions are never
// overwritten, and the write carries no resourceVersion: it cannot conflict with them (see
// package write). The link it records for the node linker (link.go) is announced once written.
// Once written, s starts from the Machine as stored (a step may write before going on: see
// provision).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.machine.Status) {
		return nil
	}
	updated, err := write.Status(ctx, r.Client, statusApply(s.machine, status, s.recordsLink), FieldOwner, &v1beta1.Machine{})
	if err != nil {
		return fmt.Errorf("writing the status of machine %s: %w", client.ObjectKeyFromObject(s.machine), err)
	}
	if updated != nil {
		r.emitTransitionEvents(ctx, s.machine, updated)
		if s.link != nil {
			r.Linker.Recorded(updated, s.link)
		}
		s.machine, s.link = updated, nil
	}
	return nil
}

func hasFinalizer(m *v1beta1.Machine) bool {
	for _, f := range m.Finalizers {
		if f == v1beta1.MachineFinalizer {
			return true
		}
	}
	return false
}

// machinesOfNode maps a Node event to the Machines linked to it.
func (r *Reconciler) machinesOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, client.MatchingFields{index.MachineByNodeName: o.GetName()})
}

// machinesOfClass maps a MachineClass event to the Machines using it.
func (r *Reconciler) machinesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.MachineByClass: o.GetName()})
}

// deletingMachinesOfNamespace maps a MachineDrainRule event to the Machines of its namespace that
// are being deleted: the drains the rule may change.
func (r *Reconciler) deletingMachinesOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.requestsFor(ctx, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.MachineDeleting: index.Deleting})
}

// requestsFor lists the Machines opts select, from the cache, as reconcile requests.
func (r *Reconciler) requestsFor(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	list := &v1beta1.MachineList{}
	if err := r.Client.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing the machines an event concerns")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
