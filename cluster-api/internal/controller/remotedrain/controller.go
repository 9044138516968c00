package remotedrain

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"machineapi.dev/nodelink/consistency"

	machinev1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/reconcile/steps"
	"machineapi.dev/machine-api/reconcile/write"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/internal/index"
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

// SetupWithManager watches remote Machines and their Clusters. The field indexes of package index
// must be registered first. guard defers a reconcile until the cache shows the earlier ones' writes
// (made through a client of guard's package, see manager.New): the drain hook and the condition.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, guard *consistency.Guard) error {
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
	return ctrl.NewControllerManagedBy(mgr).
		Named("remotedrain").
		For(&machinev1.Machine{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return v1beta1.HasRemoteNode(o.GetLabels())
		}))).
		Watches(&v1beta1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.deletingMachinesOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(guard.Reconciler(r))
}

// Reconcile holds a live remote Machine with the drain hook, and for a deleting one drains its
// workload Node, or lets it go, and removes the hook. The condition is written once, at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res ctrl.Result, retErr error) {
	m := &machinev1.Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !v1beta1.HasRemoteNode(m.Labels) || machinev1.IsPaused(m.Annotations) {
		return ctrl.Result{}, nil
	}
	if m.DeletionTimestamp.IsZero() {
		return write.RequeueOnConflict(ctrl.Result{}, r.hold(ctx, m))
	}
	if !hasHook(m) {
		return ctrl.Result{}, nil // released already, by us or by hand
	}
	s := &scope{machine: m, now: r.Clock.Now()}
	defer func() {
		res, retErr = write.RequeueOnConflict(res, errors.Join(retErr, r.report(ctx, s)))
	}()
	return steps.Pipeline(ctx, s,
		r.observeCluster,
		r.decide,
		r.waitForOtherHooks,
		r.releaseIfNothingToDrain,
		r.releaseIfTimedOut,
		r.drainWorkloadNode,
	)
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

// decide asks the drain policy what to do with the Machine's drain (decide.go).
func (r *Reconciler) decide(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	s.policy = decide(s.machine, s.cluster, s.now)
	return ctrl.Result{}, true, nil
}

// waitForOtherHooks holds the drain while preDrain hooks other than this controller's remain, as
// machine-manager's delete pipeline does before draining a Node of its own. Their owners' removal
// of a hook brings the Machine back, so there is no timed requeue.
func (r *Reconciler) waitForOtherHooks(_ context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.policy.decision.Action != drain.NodeWait {
		return ctrl.Result{}, true, nil
	}
	s.outcome = &outcome{waiting: true, eventType: eventNormal, reason: ReasonWaitingForPreDrainHooks,
		message: "waiting for the other preDrain hooks to be removed by their owners before draining: " + strings.Join(s.policy.request.HeldBy, ", ")}
	return ctrl.Result{}, false, nil
}

// releaseIfNothingToDrain removes the hook when there is no Node to drain, draining is excluded,
// or the whole workload cluster goes away.
func (r *Reconciler) releaseIfNothingToDrain(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.policy.decision.Action != drain.NodeSkip {
		return ctrl.Result{}, true, nil
	}
	return r.release(ctx, s, eventNormal, s.policy.skipReason, s.policy.request.Skip)
}

// releaseIfTimedOut removes the hook once spec.deletion.nodeDrainTimeoutSeconds has passed since
// draining began.
func (r *Reconciler) releaseIfTimedOut(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	if s.policy.decision.Action != drain.NodeGiveUp {
		return ctrl.Result{}, true, nil
	}
	msg := fmt.Sprintf("draining Node %s of the workload cluster gave up after nodeDrainTimeoutSeconds (%s); deletion goes on", s.machine.Status.NodeRef.Name, s.policy.request.Timeout)
	return r.release(ctx, s, eventWarning, ReasonDrainTimeout, msg)
}

// deletingMachinesOf maps a Cluster event to its remote Machines that are being deleted: the
// only ones whose reconcile depends on the Cluster.
func (r *Reconciler) deletingMachinesOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &machinev1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index.RemoteMachineByCluster: o.GetName()}); err != nil {
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
