package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=update;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=create;patch

// SetupWithManager gives the provider the manager's client and starts its simulated kubelet: the
// booter that registers Nodes, a controller keeping each Node's Ready condition and Lease, and one
// playing the kubelet for pods on its Nodes.
func (p *Provider) SetupWithManager(mgr ctrl.Manager) error {
	p.WithClient(mgr.GetClient())
	if err := mgr.Add(booter{p: p}); err != nil {
		return err
	}
	simNode := predicate.NewPredicateFuncs(func(o client.Object) bool {
		n, ok := o.(*corev1.Node)
		_, sim := instanceID(n.Spec.ProviderID)
		return ok && sim
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("sim-kubelet-node").
		For(&corev1.Node{}, builder.WithPredicates(simNode)).
		Watches(&v1beta1.Machine{}, handler.EnqueueRequestsFromMapFunc(p.nodeOfMachine)).
		Complete(reconcile.Func(p.reconcileNode))
	if err != nil {
		return err
	}
	bound := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && pod.Spec.NodeName != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sim-kubelet-pod").
		For(&corev1.Pod{}, builder.WithPredicates(bound)).
		Complete(reconcile.Func(p.reconcilePod))
}

// nodeOfMachine maps a Machine to its instance's Node, so fault knobs take effect at once.
func (p *Provider) nodeOfMachine(_ context.Context, o client.Object) []reconcile.Request {
	if inst, ok := p.store.get(o.GetUID()); ok && inst.Registered {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: inst.NodeName}}}
	}
	return nil
}

// readiness is the Ready condition the simulated kubelet reports for an instance, and when it
// next changes (0: not by itself).
type readiness struct {
	status          corev1.ConditionStatus
	reason, message string
	next            time.Duration
}

func ready(status corev1.ConditionStatus) readiness {
	c := readyCondition(status, metav1.Time{})
	return readiness{status: status, reason: c.Reason, message: c.Message}
}

// desiredReady is the Ready condition the simulated kubelet reports for inst at now.
func (p *Provider) desiredReady(ctx context.Context, inst Instance, found bool, now time.Time) readiness {
	if !found {
		return ready(corev1.ConditionUnknown) // the instance is gone: nobody posts status any more
	}
	var knobs map[string]string
	m := &v1beta1.Machine{}
	if err := p.getClient().Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: inst.Machine}, m); err == nil && m.UID == inst.ID {
		knobs = m.Annotations
	}
	if _, ok := knobs[UnreachableAnnotation]; ok {
		return ready(corev1.ConditionUnknown)
	}
	if inst.rebooting(now) {
		r := ready(corev1.ConditionFalse)
		r.message = fmt.Sprintf("the instance is rebooting for an in-place change to instance type %s, until %s (simulated)",
			inst.InstanceType, inst.RebootUntil.UTC().Format(time.RFC3339))
		r.next = inst.RebootUntil.Sub(now)
		return r
	}
	if v, ok := knobs[NotReadyAfterAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			if at := inst.BootAt.Add(d); now.Before(at) {
				r := ready(corev1.ConditionTrue)
				r.next = at.Sub(now)
				return r
			}
			return ready(corev1.ConditionFalse)
		}
	}
	return ready(corev1.ConditionTrue)
}

func (p *Provider) reconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	next, err := p.serveNode(ctx, req.Name)
	return reconcile.Result{RequeueAfter: next}, err
}

// serveNode is one pass of the simulated kubelet over a Node: its status (the Ready condition and
// its heartbeat; after a reboot, the instance's capacity), its Lease and its condition taints. It
// returns when the Node needs another pass.
func (p *Provider) serveNode(ctx context.Context, name string) (time.Duration, error) {
	c := p.getClient()
	node := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			p.forgetLease(name)
		}
		return 0, client.IgnoreNotFound(err)
	}
	id, ok := instanceID(node.Spec.ProviderID)
	if !ok {
		return 0, nil
	}
	now := p.opts.Clock.Now()
	inst, found := p.store.get(id)
	want := p.desiredReady(ctx, inst, found, now)
	next := want.next

	if err := p.writeNodeStatus(ctx, c, node, inst, want, now); err != nil {
		return 0, err
	}
	served := want.status != corev1.ConditionUnknown
	if served && p.opts.HeartbeatInterval > 0 {
		if err := p.renewLease(ctx, c, node, now); err != nil {
			return 0, fmt.Errorf("sim: renewing the Lease of Node %s: %w", node.Name, err)
		}
		next = minPositive(next, p.opts.HeartbeatInterval)
	}
	if want.status == corev1.ConditionTrue && found && inst.InPlaceUpdates > 0 {
		if err := syncInstanceTypeLabel(ctx, c, node, inst.InstanceType); err != nil {
			return 0, err
		}
	}
	if !p.opts.LeaveConditionTaints {
		if err := p.syncConditionTaints(ctx, c, node, want.status); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// writeNodeStatus brings the Node's Ready condition to want (a new transition when its status
// changes; a heartbeat when one is due) and, while the instance runs, its capacity and allocatable
// to the instance's capacity (which an in-place type change alters), in one patch when anything
// changed. Resources the instance does not list are left as they are.
func (p *Provider) writeNodeStatus(ctx context.Context, c client.Client, node *corev1.Node, inst Instance, want readiness, now time.Time) error {
	before := node.DeepCopy()
	stamp := metav1.NewTime(now)
	changed := false
	var cond *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			cond = &node.Status.Conditions[i]
		}
	}
	switch {
	case cond == nil || cond.Status != want.status:
		updated := readyCondition(want.status, stamp)
		updated.Reason, updated.Message = want.reason, want.message
		setNodeCondition(node, updated)
		changed = true
	case want.status == corev1.ConditionUnknown:
		// Nobody posts status: the condition stays as whoever marked it Unknown wrote it.
	case cond.Reason != want.reason || cond.Message != want.message:
		cond.Reason, cond.Message, cond.LastHeartbeatTime = want.reason, want.message, stamp
		changed = true
	case heartbeatDue(cond, now, p.nodeStatusInterval()):
		cond.LastHeartbeatTime = stamp
		changed = true
	}
	if want.status == corev1.ConditionTrue {
		for res, q := range inst.Capacity {
			for _, list := range []*corev1.ResourceList{&node.Status.Capacity, &node.Status.Allocatable} {
				if have, ok := (*list)[res]; !ok || have.Cmp(q) != 0 {
					if *list == nil {
						*list = corev1.ResourceList{}
					}
					(*list)[res] = q.DeepCopy()
					changed = true
				}
			}
		}
	}
	if !changed {
		return nil
	}
	if err := c.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("sim: writing the status of Node %s (Ready=%s): %w", node.Name, want.status, err)
	}
	return nil
}

// syncInstanceTypeLabel sets the Node's instance-type label to the instance's type, as a kubelet
// does when it starts again on a resized instance. Only Nodes of instances updated in place need
// it: the others registered with their type.
func syncInstanceTypeLabel(ctx context.Context, c client.Client, node *corev1.Node, instanceType string) error {
	if instanceType == "" || node.Labels[corev1.LabelInstanceTypeStable] == instanceType {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, corev1.LabelInstanceTypeStable, instanceType)
	if err := c.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("sim: labelling Node %s with instance type %s: %w", node.Name, instanceType, err)
	}
	return nil
}

// nodeStatusInterval is how often the Ready condition's heartbeat is renewed (0: never).
func (p *Provider) nodeStatusInterval() time.Duration {
	if p.opts.HeartbeatInterval <= 0 {
		return 0
	}
	return max(nodeStatusReportInterval, p.opts.HeartbeatInterval)
}

// conditionTaints are the NoSchedule taints the node lifecycle controller of kube-controller-manager
// keeps in line with the Ready condition. Where that controller does not run, the simulated kubelet
// keeps them itself (unless Options.LeaveConditionTaints).
var conditionTaints = map[corev1.ConditionStatus]string{
	corev1.ConditionFalse:   corev1.TaintNodeNotReady,
	corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
}

func (p *Provider) syncConditionTaints(ctx context.Context, c client.Client, node *corev1.Node, ready corev1.ConditionStatus) error {
	want := conditionTaints[ready]
	var taints []corev1.Taint
	has := false
	for _, t := range node.Spec.Taints {
		managed := (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) && t.Effect == corev1.TaintEffectNoSchedule
		switch {
		case managed && t.Key == want:
			has = true
			taints = append(taints, t)
		case !managed:
			taints = append(taints, t)
		}
	}
	if want != "" && !has {
		taints = append(taints, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule})
	}
	if len(taints) == len(node.Spec.Taints) && (want == "" || has) {
		return nil
	}
	patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	node.Spec.Taints = taints
	if err := c.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("sim: updating the condition taints of Node %s: %w", node.Name, err)
	}
	return nil
}

func setNodeCondition(node *corev1.Node, c corev1.NodeCondition) {
	node.Status.Conditions = replaceOrAppend(node.Status.Conditions, c, func(x corev1.NodeCondition) bool { return x.Type == c.Type })
}

// replaceOrAppend replaces the first element of list that is the same as v (a condition of v's
// type), or appends v.
func replaceOrAppend[T any](list []T, v T, same func(T) bool) []T {
	if i := slices.IndexFunc(list, same); i >= 0 {
		list[i] = v
		return list
	}
	return append(list, v)
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	return min(a, b)
}

// reconcilePod plays the kubelet for one pod on a served sim Node: it starts pending pods and
// finishes terminating ones (recording each), so a drain completes. Pods on an unreachable Node
// (Ready Unknown: no kubelet answers) are left as they are; a NotReady kubelet still serves them.
func (p *Provider) reconcilePod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := p.getClient()
	pod := &corev1.Pod{}
	if err := c.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	node := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	id, ok := instanceID(node.Spec.ProviderID)
	if !ok || !kubeletAnswers(node) {
		return reconcile.Result{}, nil
	}
	if _, found := p.store.get(id); !found {
		return reconcile.Result{}, nil
	}
	if pod.DeletionTimestamp != nil {
		if len(pod.Finalizers) > 0 {
			return reconcile.Result{}, nil // someone else still holds the pod
		}
		err := c.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("sim: finishing pod %s: %w", req.NamespacedName, err)
		}
		_, _, err = p.store.update(id, func(i *Instance) { i.PodsRemoved++ })
		return reconcile.Result{}, err
	}
	if pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "" {
		patch := client.MergeFrom(pod.DeepCopy())
		startPod(pod, node, metav1.NewTime(p.opts.Clock.Now()))
		if err := c.Status().Patch(ctx, pod, patch); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("sim: starting pod %s: %w", req.NamespacedName, err)
		}
	}
	return reconcile.Result{}, nil
}

// startPod writes the status a kubelet reports once a pod's containers run and pass their
// readiness checks: phase Running, the Initialized, ContainersReady and Ready conditions, one
// running, ready container status per container (so kubectl shows 1/1), and the Node's address as
// host and pod IP. The disruption controller counts a pod healthy by its Ready condition.
func startPod(pod *corev1.Pod, node *corev1.Node, now metav1.Time) {
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(pod, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	pod.Status.ContainerStatuses = nil
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: ctr.Name, Image: ctr.Image, ImageID: "sim://" + ctr.Image, ContainerID: "sim://" + string(pod.UID) + "/" + ctr.Name,
			Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			pod.Status.HostIP = a.Address
			pod.Status.HostIPs = []corev1.HostIP{{IP: a.Address}}
			// Pods share their Node's address: the sim has no pod network, nothing routes to them.
			pod.Status.PodIP, pod.Status.PodIPs = a.Address, []corev1.PodIP{{IP: a.Address}}
		}
	}
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	pod.Status.Conditions = replaceOrAppend(pod.Status.Conditions, c, func(x corev1.PodCondition) bool { return x.Type == c.Type })
}

// kubeletAnswers reports whether the Node's kubelet still posts status (Ready is not Unknown).
func kubeletAnswers(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionUnknown
		}
	}
	return false
}
