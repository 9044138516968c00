package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubectldrain "k8s.io/kubectl/pkg/drain"
)

// outcome is what became of one eviction or deletion request.
type outcome struct {
	// evicted: the API server accepted the eviction or the deletion; the pod is terminating.
	evicted bool
	// gone: the pod no longer existed.
	gone bool
	// blocked: why the pod was not evicted.
	blocked *BlockedPod
}

// record fills in what a step did from its plan and the outcomes of its requests, which are in
// the order of plan.Evict, then plan.Delete. It makes no API calls.
func (r *Result) record(plan *Plan, outcomes []outcome) {
	r.Unreachable = plan.Unreachable
	r.UnreachableSince = plan.UnreachableSince
	r.UnreachableDeleteAt = plan.UnreachableDeleteAt
	r.DeletingUnreachable = plan.DeletingUnreachable
	r.NextDeletion = plan.NextDeletion
	r.PodDeadline = plan.PodDeadline
	r.Terminating = plan.Terminating
	r.Skipped = plan.Skipped
	r.Blocked = slices.Clone(plan.Blocked)
	r.Remaining = slices.Clone(plan.Terminating)
	for _, b := range plan.Blocked {
		r.Remaining = append(r.Remaining, b.Pod)
	}
	for i, o := range outcomes {
		var key types.NamespacedName
		deleted := i >= len(plan.Evict)
		if deleted {
			key = plan.Delete[i-len(plan.Evict)].Pod
		} else {
			key = plan.Evict[i]
		}
		switch {
		case o.gone:
			continue
		case o.evicted && deleted:
			r.Deleted = append(r.Deleted, plan.Delete[i-len(plan.Evict)])
		case o.evicted:
			r.Evicted = append(r.Evicted, key)
		case o.blocked != nil:
			r.Blocked = append(r.Blocked, *o.blocked)
		}
		r.Remaining = append(r.Remaining, key)
	}
	slices.SortFunc(r.Remaining, compareKeys)
	slices.SortFunc(r.Blocked, func(a, b BlockedPod) int { return compareKeys(a.Pod, b.Pod) })
	r.Done = len(r.Remaining) == 0
}

// removeAll sends the plan's requests: one eviction per pod of plan.Evict, then one deletion per
// pod of plan.Delete, at most Options.MaxConcurrentEvictions at a time, and returns their outcomes
// in that order. Requests not started when ctx ends are not sent. It returns once every request
// it sent has returned; client-go requests end with ctx.
func (d *Drainer) removeAll(ctx context.Context, h *kubectldrain.Helper, plan *Plan, pdbs []policyv1.PodDisruptionBudget) []outcome {
	pods := append(slices.Clone(plan.evict), plan.delete...)
	out := make([]outcome, len(pods))
	slots := make(chan struct{}, d.opts.MaxConcurrentEvictions)
	var wg sync.WaitGroup
	for i := range pods {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			for j := i; j < len(pods); j++ {
				out[j] = outcome{blocked: d.deadlineReached(&pods[j])}
			}
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if i < len(plan.evict) {
				out[i] = d.evict(ctx, h, &pods[i], pdbs)
			} else {
				out[i] = d.deletePod(ctx, &pods[i], plan.Delete[i-len(plan.evict)].GracePeriodSeconds)
			}
		})
	}
	wg.Wait()
	return out
}

// evict sends the eviction request for one pod and classifies the answer.
func (d *Drainer) evict(ctx context.Context, h *kubectldrain.Helper, pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) outcome {
	if d.opts.OnPodDeletionOrEvictionStarted != nil {
		d.opts.OnPodDeletionOrEvictionStarted(pod, true)
	}
	err := h.EvictPod(*pod, policyv1.SchemeGroupVersion)
	if d.opts.OnPodDeletionOrEvictionFinished != nil {
		finished := err
		if apierrors.IsNotFound(err) {
			finished = nil
		}
		d.opts.OnPodDeletionOrEvictionFinished(pod, true, finished)
	}
	switch {
	case err == nil:
		return outcome{evicted: true}
	case apierrors.IsNotFound(err):
		return outcome{gone: true}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return outcome{blocked: d.deadlineReached(pod)}
	case apierrors.IsTooManyRequests(err):
		return outcome{blocked: describeRefusal(d.freshBudgets(ctx, pod.Namespace, pdbs), pod, refusalMessage(err))}
	case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return outcome{blocked: &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not evicted: namespace %s is terminating and refuses evictions; the next step retries", pod.Namespace)}}
	case apierrors.IsForbidden(err):
		return outcome{blocked: &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not evicted: %v (the drainer needs permission to create pods/eviction)", err)}}
	default:
		return outcome{blocked: &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not evicted: eviction failed: %v; the next step retries", err)}}
	}
}

// deletePod deletes one pod with the given grace period, bypassing the Eviction API (so no
// PodDisruptionBudget is consulted), and classifies the answer. The deletion is guarded by the
// pod's UID, so a pod re-created under the same name is left alone (and reported gone).
func (d *Drainer) deletePod(ctx context.Context, pod *corev1.Pod, grace int64) outcome {
	if d.opts.OnPodDeletionOrEvictionStarted != nil {
		d.opts.OnPodDeletionOrEvictionStarted(pod, false)
	}
	err := d.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	gone := apierrors.IsNotFound(err) || apierrors.IsConflict(err)
	if d.opts.OnPodDeletionOrEvictionFinished != nil {
		finished := err
		if gone {
			finished = nil
		}
		d.opts.OnPodDeletionOrEvictionFinished(pod, false, finished)
	}
	switch {
	case err == nil:
		return outcome{evicted: true}
	case gone:
		return outcome{gone: true}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return outcome{blocked: d.deadlineReached(pod)}
	case apierrors.IsForbidden(err):
		return outcome{blocked: &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not deleted: %v (the drainer needs permission to delete pods)", err)}}
	default:
		return outcome{blocked: &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not deleted: deletion failed: %v; the next step retries", err)}}
	}
}

// freshBudgets re-reads the budgets of namespace after a refusal, so the reason names what they
// allow now; it falls back to the ones read at the start of the step.
func (d *Drainer) freshBudgets(ctx context.Context, namespace string, fallback []policyv1.PodDisruptionBudget) []policyv1.PodDisruptionBudget {
	list, err := d.client.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fallback
	}
	return list.Items
}

func (d *Drainer) deadlineReached(pod *corev1.Pod) *BlockedPod {
	return &BlockedPod{Pod: keyOf(pod), Cause: CauseStepDeadline,
		Reason: fmt.Sprintf("not removed in this step: its deadline (%s) came first; the next step continues", d.opts.StepTimeout)}
}

// refusalMessage returns the Eviction API's explanation of a refusal: the disruption budget cause
// when there is one, else the error.
func refusalMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if details := status.Status().Details; details != nil {
			for _, cause := range details.Causes {
				if cause.Type == policyv1.DisruptionBudgetCause && cause.Message != "" {
					return cause.Message
				}
			}
		}
	}
	return err.Error()
}
