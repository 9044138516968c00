package drain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	kubectldrain "k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"
)

// observation is everything a plan is computed from, read from the API server in one step.
type observation struct {
	node *corev1.Node
	now  time.Time
	// pods are all the pods bound to the node, including those kubectl's filters hide.
	pods    []corev1.Pod
	kubectl *kubectlView
	// pdbs are the budgets of the namespaces that have pods a budget may protect.
	pdbs []policyv1.PodDisruptionBudget
}

// observe reads the node's pods, kubectl's verdict on them and the budgets that may protect them.
func (d *Drainer) observe(ctx context.Context, h *kubectldrain.Helper, node *corev1.Node) (observation, error) {
	obs := observation{node: node}
	pods, err := d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String(),
	})
	if err != nil {
		return obs, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	obs.pods = pods.Items
	if obs.kubectl, err = viewThroughKubectl(h, node.Name); err != nil {
		return obs, err
	}
	var namespaces []string
	for _, pod := range obs.kubectl.deletable {
		if !budgetDoesNotApply(&pod) && !slices.Contains(namespaces, pod.Namespace) {
			namespaces = append(namespaces, pod.Namespace)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		pdbs, err := d.client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return obs, fmt.Errorf("listing the PodDisruptionBudgets of namespace %s: %w", ns, err)
		}
		obs.pdbs = append(obs.pdbs, pdbs.Items...)
	}
	obs.now = d.opts.Clock.Now()
	return obs, nil
}

// buildPlan decides what a step does with every pod of the node. It makes no API calls.
func buildPlan(o Options, obs observation) *Plan {
	p := &Plan{
		Node:        obs.node.Name,
		Cordoned:    obs.node.Spec.Unschedulable,
		Unreachable: o.AssumeUnreachable || nodeUnreachable(obs.node),
	}
	if o.GracePeriodSeconds != nil {
		p.GracePeriodSeconds = ptr.To(*o.GracePeriodSeconds)
	}
	if p.Unreachable {
		p.GracePeriodSeconds = ptr.To(UnreachableGracePeriodSeconds)
	}

	all := map[types.NamespacedName]corev1.Pod{}
	for _, pod := range obs.pods {
		all[keyOf(&pod)] = pod
	}
	for key, pod := range obs.kubectl.deletable {
		all[key] = pod // kubectl's copy may be newer
	}
	keys := make([]types.NamespacedName, 0, len(all))
	for key, pod := range all {
		// A fake clientset ignores field selectors; a real API server never returns such a pod.
		if pod.Spec.NodeName == obs.node.Name {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, compareKeys)

	budget := newBudgets(obs.pdbs)
	for _, key := range keys {
		pod := all[key]
		if o.hasSkipLabel(&pod) {
			p.Skipped = append(p.Skipped, SkippedPod{Pod: key, Reason: fmt.Sprintf("has label %s=%s", o.SkipLabelKey, o.SkipLabelValue)})
			continue
		}
		if _, ok := obs.kubectl.deletable[key]; !ok {
			p.leftByKubectl(&pod, obs.kubectl)
			continue
		}
		switch act, overdue := decideTerminating(&pod, obs.now, p.Unreachable, o.UnreachableTerminatingTimeout); act {
		case evictPod:
			if blocked := budget.admit(&pod); blocked != nil {
				p.Blocked = append(p.Blocked, *blocked)
				continue
			}
			p.Evict = append(p.Evict, key)
			p.evict = append(p.evict, pod)
		case shortenGracePeriod:
			p.Evict = append(p.Evict, key)
			p.evict = append(p.evict, pod)
		case waitForPod:
			p.Terminating = append(p.Terminating, key)
		case stopWaiting:
			p.Skipped = append(p.Skipped, SkippedPod{Pod: key,
				Reason: fmt.Sprintf("terminating for %s past its deletion time on an unreachable node: not waited for", overdue.Round(time.Second))})
		}
	}
	return p
}

// leftByKubectl records a pod kubectl's filters do not let the drain evict, with kubectl's reason.
func (p *Plan) leftByKubectl(pod *corev1.Pod, view *kubectlView) {
	key := keyOf(pod)
	if reason, ok := view.refusals[key]; ok {
		p.Blocked = append(p.Blocked, BlockedPod{Pod: key, Cause: CauseDrainFilter, Reason: "not evicted: kubectl's drain filters refuse " + reason})
		return
	}
	reason := "left alone by kubectl's drain filters"
	switch msg, ok := view.warnings[key]; {
	case ok:
		reason = msg
	case pod.Annotations[corev1.MirrorPodAnnotationKey] != "":
		reason = "mirror pod: the kubelet runs it from a static manifest"
	}
	p.Skipped = append(p.Skipped, SkippedPod{Pod: key, Reason: reason})
}

// terminatingAction is what a step does with a pod kubectl would evict, given whether it is already
// terminating.
type terminatingAction int

const (
	// evictPod: the pod is not terminating; evict it if its budget allows.
	evictPod terminatingAction = iota
	// waitForPod: the pod is terminating; wait for it to go.
	waitForPod
	// shortenGracePeriod: unreachable node, the pod is terminating with a longer grace period than
	// UnreachableGracePeriodSeconds; evict it again with the short one, so that stopWaiting comes
	// soon instead of after the pod's own grace period.
	shortenGracePeriod
	// stopWaiting: unreachable node, the pod has been terminating past its deletion time for longer
	// than the timeout; no kubelet will finish it, so the drain does not wait for it.
	stopWaiting
)

// decideTerminating returns what to do with pod at now, and for how long it has been terminating
// past its deletion timestamp (the time its grace period ended).
func decideTerminating(pod *corev1.Pod, now time.Time, unreachable bool, timeout time.Duration) (terminatingAction, time.Duration) {
	if pod.DeletionTimestamp == nil {
		return evictPod, 0
	}
	overdue := now.Sub(pod.DeletionTimestamp.Time)
	if !unreachable {
		return waitForPod, overdue
	}
	if overdue > timeout {
		return stopWaiting, overdue
	}
	grace := pod.DeletionGracePeriodSeconds
	if (grace == nil || *grace > UnreachableGracePeriodSeconds) &&
		pod.DeletionTimestamp.After(now.Add(time.Duration(UnreachableGracePeriodSeconds)*time.Second)) {
		return shortenGracePeriod, overdue
	}
	return waitForPod, overdue
}

// nodeUnreachable reports whether the node controller has lost contact with the node's kubelet:
// its Ready condition is Unknown.
func nodeUnreachable(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
