package remotedrain

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/drain"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// Requeue intervals and defaults.
const (
	// drainPoll: a drain that is not done (or cannot reach the workload API server) is stepped
	// again after this long.
	drainPoll = 5 * time.Second
	// DefaultMaxConcurrentReconciles is the number of Machines reconciled in parallel when
	// Reconciler.MaxConcurrentReconciles is 0. A drain step takes at most drain.DefaultStepTimeout.
	DefaultMaxConcurrentReconciles = 10
	// DefaultWorkloadQPS and DefaultWorkloadBurst bound each workload clientset when the
	// Reconciler's are 0.
	DefaultWorkloadQPS   = 20
	DefaultWorkloadBurst = 40
)

// FieldOwner is the server-side apply field manager of the WorkloadNodeDrained condition.
const FieldOwner = "cluster-manager-remotedrain"

// Reconciler is the remote drain controller.
type Reconciler struct {
	// Client reads Machines and Clusters from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads kubeconfig Secrets (get only, never cached).
	APIReader client.Reader
	// Recorder emits events on Machines.
	Recorder events.EventRecorder
	// Clock is the time source; default the real clock.
	Clock clock.Clock
	// Drain configures the drain of workload Nodes (its Clock defaults to Clock).
	Drain drain.Options
	// MaxConcurrentReconciles is the number of Machines reconciled in parallel; default
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// WorkloadQPS and WorkloadBurst bound each workload clientset's requests.
	WorkloadQPS   float32
	WorkloadBurst int

	clientsets *clientsets
}

// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=machine.machineapi.dev,resources=machines/status,verbs=get;patch
// +kubebuilder:rbac:groups=cluster.machineapi.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// IndexRemoteCluster indexes the Machines whose Node lives in a workload cluster by the name of
// their Cluster, so a Cluster's change reaches its deleting Machines without a list-and-loop.
const IndexRemoteCluster = "remotedrain.cluster.machineapi.dev/cluster-name"

// SetupWithManager registers IndexRemoteCluster and watches remote Machines and their Clusters.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Drain.Clock == nil {
		r.Drain.Clock = r.Clock
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if r.WorkloadQPS <= 0 {
		r.WorkloadQPS = DefaultWorkloadQPS
	}
	if r.WorkloadBurst <= 0 {
		r.WorkloadBurst = DefaultWorkloadBurst
	}
	r.clientsets = newClientsets()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &machinev1.Machine{}, IndexRemoteCluster, remoteClusterOf); err != nil {
		return fmt.Errorf("indexing remote Machines by cluster name: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("remotedrain").
		For(&machinev1.Machine{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return isRemote(o.GetLabels())
		}))).
		Watches(&v1beta1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.deletingMachinesOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Reconcile holds a live remote Machine with the drain hook, and for a deleting one drains its
// workload Node, or lets it go, and removes the hook. The condition is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ ctrl.Result, retErr error) {
	m := &machinev1.Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !isRemote(m.Labels) || machinev1.IsPaused(m.Annotations) {
		return ctrl.Result{}, nil
	}
	if m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.hold(ctx, m)
	}
	if !hasHook(m) {
		return ctrl.Result{}, nil // released already, by us or by hand
	}
	s := &scope{machine: m, now: r.Clock.Now()}
	defer func() {
		retErr = errors.Join(retErr, r.report(ctx, s))
	}()
	return runPipeline(ctx, s,
		r.observeCluster,
		r.releaseIfNothingToDrain,
		r.releaseIfTimedOut,
		r.drainWorkloadNode,
	)
}

// step is one stage of the drain pipeline. It returns done=false to stop the stages after it
// (it released the hook, or waits), with the result to requeue with.
type step func(ctx context.Context, s *scope) (res ctrl.Result, done bool, err error)

// runPipeline runs steps in order until one is not done or fails.
func runPipeline(ctx context.Context, s *scope, steps ...step) (ctrl.Result, error) {
	for _, st := range steps {
		res, done, err := st(ctx, s)
		if err != nil || !done {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// observeCluster reads the Machine's Cluster; s.cluster stays nil when it is gone.
func (r *Reconciler) observeCluster(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	c := &v1beta1.Cluster{}
	key := types.NamespacedName{Namespace: s.machine.Namespace, Name: s.machine.Labels[v1beta1.ClusterNameLabel]}
	err := r.Client.Get(ctx, key, c)
	switch {
	case apierrors.IsNotFound(err):
		r.clientsets.forget(key)
	case err != nil:
		return ctrl.Result{}, false, fmt.Errorf("reading cluster %s of machine %s: %w", key, client.ObjectKeyFromObject(s.machine), err)
	default:
		s.cluster = c
		if !c.DeletionTimestamp.IsZero() {
			r.clientsets.forget(key)
		}
	}
	return ctrl.Result{}, true, nil
}

// releaseIfNothingToDrain removes the hook at once when there is no Node to drain, draining is
// excluded, or the whole workload cluster goes away.
func (r *Reconciler) releaseIfNothingToDrain(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	reason, msg := nothingToDrain(s.machine, s.cluster)
	if reason == "" {
		return ctrl.Result{}, true, nil
	}
	return r.release(ctx, s, eventNormal, reason, msg)
}

// releaseIfTimedOut removes the hook once spec.deletion.nodeDrainTimeoutSeconds has passed since
// the Machine's deletion began.
func (r *Reconciler) releaseIfTimedOut(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	timeout, deadline, ok := drainDeadline(s.machine)
	if !ok || s.now.Before(deadline) {
		return ctrl.Result{}, true, nil
	}
	msg := fmt.Sprintf("draining Node %s of the workload cluster gave up after nodeDrainTimeoutSeconds (%s); deletion goes on", s.machine.Status.NodeRef.Name, timeout)
	return r.release(ctx, s, eventWarning, ReasonDrainTimeout, msg)
}

// deletingMachinesOf maps a Cluster event to its remote Machines that are being deleted: the
// only ones whose reconcile depends on the Cluster.
func (r *Reconciler) deletingMachinesOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &machinev1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{IndexRemoteCluster: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the remote machines of a cluster", "cluster", client.ObjectKeyFromObject(o))
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if m := &list.Items[i]; !m.DeletionTimestamp.IsZero() && hasHook(m) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
	}
	return reqs
}

// remoteClusterOf is the IndexRemoteCluster value of a Machine.
func remoteClusterOf(o client.Object) []string {
	if !isRemote(o.GetLabels()) {
		return nil
	}
	return []string{o.GetLabels()[v1beta1.ClusterNameLabel]}
}
