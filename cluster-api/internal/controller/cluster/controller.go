package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"machineapi.dev/nodelink/consistency"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/index"
	"machineapi.dev/cluster-api/internal/remotelink"
	"machineapi.dev/cluster-api/provider"
)

// Requeue intervals.
const (
	// memberPoll: deletion waits for the cluster's machines (their events also bring it back).
	memberPoll = 5 * time.Second
	// linkerStartRetry: the linker registry had not started yet.
	linkerStartRetry = time.Second
	// DefaultKubeconfigPollInterval is how often a kubeconfig Secret is read again.
	DefaultKubeconfigPollInterval = time.Minute
)

// FieldOwner is the server-side apply field manager of the Cluster's status.
const FieldOwner = "cluster-controller"

// Reconciler is the Cluster controller.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads kubeconfig Secrets (get only, never cached) and settles name conflicts.
	APIReader client.Reader
	// Provider creates and deletes the clusters' infrastructure.
	Provider provider.Provider
	// Recorder emits events on Clusters.
	Recorder events.EventRecorder
	// Clock is the time source.
	Clock clock.Clock
	// MaxConcurrentReconciles is the number of Clusters reconciled in parallel.
	MaxConcurrentReconciles int
	// KubeconfigPollInterval is how often a Cluster's kubeconfig Secret is read again to notice
	// a new kubeconfig; default DefaultKubeconfigPollInterval.
	KubeconfigPollInterval time.Duration
	// WorkloadQPS and WorkloadBurst bound each remote linker's requests to its workload cluster.
	WorkloadQPS   float32
	WorkloadBurst int
	// RemoteLink configures the remote node linkers.
	RemoteLink remotelink.Options

	linkers *remotelink.Registry
	notify  chan event.GenericEvent
}

// +kubebuilder:rbac:groups=cluster.machineapi.dev,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.machineapi.dev,resources=clusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.machineapi.dev,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinedeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machinesets,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager adds the remote linker registry to mgr, and watches Clusters, their members
// and the linkers' reachability changes. The field indexes of package index must be registered
// first. guard defers a reconcile until the cache shows the earlier ones' writes (made through a
// client of guard's package, see manager.New): the pools' MachineDeployments, the members deleted,
// the Cluster's finalizer and status.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, guard *consistency.Guard) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.KubeconfigPollInterval <= 0 {
		r.KubeconfigPollInterval = DefaultKubeconfigPollInterval
	}
	if r.RemoteLink.RestartDelay <= 0 {
		r.RemoteLink.RestartDelay = remotelink.DefaultRestartDelay
	}
	r.notify = make(chan event.GenericEvent, notifyBuffer)
	r.linkers = remotelink.New(mgr, r.RemoteLink, r.enqueue)
	if err := mgr.Add(r.linkers); err != nil {
		return fmt.Errorf("adding the remote node linkers to the manager: %w", err)
	}
	toCluster := handler.EnqueueRequestsFromMapFunc(clusterOfMember)
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		For(&v1beta1.Cluster{}).
		Watches(&machinev1.MachineDeployment{}, toCluster).
		Watches(&machinev1.MachineSet{}, toCluster).
		Watches(&machinev1.Machine{}, toCluster).
		WatchesRawSource(source.Channel(r.notify, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile moves one Cluster towards its spec. It reads like the life of a Cluster: paused
// Clusters are left alone; deleting Clusters go through the delete pipeline; the others get the
// finalizer, then their infrastructure, worker pools and remote Node linking. Status is written
// once, at the end, from what the steps observed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	c := &v1beta1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.linkers.Stop(req.NamespacedName) // gone without our finalizer (it was removed by hand)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Spec.Paused {
		log.FromContext(ctx).V(1).Info("cluster is paused (spec.paused); leaving it alone")
		return ctrl.Result{}, nil
	}
	if c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, v1beta1.ClusterFinalizer) {
		err := write.AddFinalizer(ctx, r.Client, c, v1beta1.ClusterFinalizer)
		return write.RequeueOnConflict(ctrl.Result{}, client.IgnoreNotFound(err)) // the update event brings the Cluster back
	}
	s := &scope{cluster: c, now: r.Clock.Now()}
	defer func() {
		res, retErr = write.RequeueOnConflict(res, errors.Join(retErr, r.writeStatus(ctx, s)))
	}()
	if !c.DeletionTimestamp.IsZero() {
		return steps.Pipeline(ctx, s,
			r.observeRemote,
			steps.Done(r.observeMembers),
			r.deleteMembers,
			r.stopRemoteLinker,
			r.deleteInfrastructure,
			r.removeFinalizer,
		)
	}
	return steps.All(ctx, s,
		r.reconcileInfrastructure,
		r.reconcileWorkerPools,
		r.linkRemoteNodes,
		r.observeMembers,
	)
}

// writeStatus writes the status computed from s with one server-side apply of the whole status
// (the Cluster controller owns all of it), or nothing if it did not change. The write cannot
// conflict but on a Cluster re-created under the same name (see package write).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.finalizerRemoved {
		return nil
	}
	status := computeStatus(s)
	if equality.Semantic.DeepEqual(status, s.cluster.Status) {
		return nil
	}
	ac, err := statusApply(s.cluster, status)
	if err != nil {
		return err
	}
	updated, err := write.Status(ctx, r.Client, ac, FieldOwner, &v1beta1.Cluster{})
	if err != nil {
		return fmt.Errorf("writing the status of cluster %s: %w", client.ObjectKeyFromObject(s.cluster), err)
	}
	if updated != nil {
		r.emitTransitionEvents(s.cluster, updated)
	}
	return nil
}

// notifyBuffer bounds the reachability notifications waiting for the controller. One dropped
// when it is full delays the Cluster's condition by at most KubeconfigPollInterval.
const notifyBuffer = 1024

// enqueue asks for a reconcile of the Cluster key; it never blocks (see notifyBuffer).
func (r *Reconciler) enqueue(key types.NamespacedName) {
	obj := &v1beta1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case r.notify <- event.GenericEvent{Object: obj}:
	default:
	}
}

// clusterOfMember maps a MachineDeployment, MachineSet or Machine event to its Cluster.
func clusterOfMember(_ context.Context, o client.Object) []reconcile.Request {
	names := index.ClusterName(o)
	if len(names) == 0 {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: names[0]}}}
}
