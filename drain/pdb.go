package drain

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// maxDisruptedPods is the Eviction API's limit on a budget's status.disruptedPods: beyond it the
// API refuses evictions until the disruption controller confirms the pending ones.
const maxDisruptedPods = 2000

// budgets predicts, the way the Eviction API decides it, whether evicting pods one after another is
// allowed by the PodDisruptionBudgets of their namespaces. Each admitted pod spends one disruption of
// its budget, as the Eviction API does, so a budget that allows one disruption admits one pod per step.
//
// The Eviction API stays the authority: a prediction only spares requests that would be refused,
// and a refusal of a pod it admitted is still reported as blocked.
type budgets struct {
	pdbs []policyv1.PodDisruptionBudget
	// spent maps a budget to the pods that took one of its disruptions in this step.
	spent map[types.NamespacedName][]types.NamespacedName
}

func newBudgets(pdbs []policyv1.PodDisruptionBudget) *budgets {
	return &budgets{pdbs: pdbs, spent: map[types.NamespacedName][]types.NamespacedName{}}
}

// admit returns nil when the Eviction API would evict pod now, or why it would refuse.
func (b *budgets) admit(pod *corev1.Pod) *BlockedPod {
	if budgetDoesNotApply(pod) {
		return nil
	}
	matches := matchingBudgets(b.pdbs, pod)
	if len(matches) == 0 {
		return nil
	}
	blocked := &BlockedPod{Pod: keyOf(pod), Cause: CausePodDisruptionBudget}
	for _, pdb := range matches {
		blocked.PodDisruptionBudgets = append(blocked.PodDisruptionBudgets, refOf(pdb))
	}
	if len(matches) > 1 {
		names := make([]string, 0, len(matches))
		for _, ref := range blocked.PodDisruptionBudgets {
			names = append(names, ref.String())
		}
		blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudgets %s: the Eviction API refuses pods selected by more than one budget; delete one or narrow its selector",
			strings.Join(names, ", "))
		return blocked
	}
	pdb := matches[0]
	name := refOf(pdb).String()
	if !podReady(pod) {
		// An unready pod does not count as healthy, so evicting it may not spend the budget.
		if pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			return nil
		}
		if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return nil
		}
	}
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudget %s (its status is out of date: observedGeneration %d < generation %d; the disruption controller of kube-controller-manager updates it)",
			name, pdb.Status.ObservedGeneration, pdb.Generation)
		return blocked
	case pdb.Status.DisruptionsAllowed < 0:
		blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudget %s (allows %d disruptions)", name, pdb.Status.DisruptionsAllowed)
		return blocked
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudget %s (more than %d evictions are not yet confirmed by the disruption controller)", name, maxDisruptedPods)
		return blocked
	}
	key := types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}
	spent := b.spent[key]
	if int(pdb.Status.DisruptionsAllowed) <= len(spent) {
		blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudget %s (allows %s", name, disruptions(pdb.Status.DisruptionsAllowed))
		if len(spent) > 0 {
			taken := make([]string, 0, len(spent))
			for _, p := range spent {
				taken = append(taken, p.String())
			}
			blocked.Reason += ", taken in this step by " + strings.Join(taken, ", ")
		}
		blocked.Reason += ")"
		return blocked
	}
	b.spent[key] = append(spent, keyOf(pod))
	return nil
}

// budgetDoesNotApply mirrors the Eviction API: pods that are pending, finished or already
// terminating are deleted without consulting any budget.
func budgetDoesNotApply(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// matchingBudgets returns the budgets in pod's namespace whose selector matches the pod's labels,
// as the Eviction API finds them: a budget whose selector does not parse matches nothing.
func matchingBudgets(pdbs []policyv1.PodDisruptionBudget, pod *corev1.Pod) []policyv1.PodDisruptionBudget {
	var out []policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

// describeRefusal explains a 429 the Eviction API returned for pod, using the budgets read after
// the refusal. apiMessage is the API's own explanation, used when the budgets alone do not tell.
func describeRefusal(pdbs []policyv1.PodDisruptionBudget, pod *corev1.Pod, apiMessage string) *BlockedPod {
	if blocked := newBudgets(pdbs).admit(pod); blocked != nil {
		return blocked
	}
	matches := matchingBudgets(pdbs, pod)
	if len(matches) == 0 {
		// No budget selects the pod: the server is throttling requests, not enforcing a budget.
		return &BlockedPod{Pod: keyOf(pod), Cause: CauseEvictionError,
			Reason: fmt.Sprintf("not evicted: the API server throttled the eviction request (429: %s); the next step retries", apiMessage)}
	}
	// The budgets read now would allow it: they changed since the API server decided.
	blocked := &BlockedPod{Pod: keyOf(pod), Cause: CausePodDisruptionBudget}
	names := make([]string, 0, len(matches))
	for _, pdb := range matches {
		blocked.PodDisruptionBudgets = append(blocked.PodDisruptionBudgets, refOf(pdb))
		names = append(names, refOf(pdb).String())
	}
	blocked.Reason = fmt.Sprintf("blocked by PodDisruptionBudget %s (the Eviction API refused: %s)", strings.Join(names, ", "), apiMessage)
	return blocked
}

func disruptions(n int32) string {
	if n == 1 {
		return "1 disruption"
	}
	return fmt.Sprintf("%d disruptions", n)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func refOf(pdb policyv1.PodDisruptionBudget) PodDisruptionBudgetRef {
	return PodDisruptionBudgetRef{
		NamespacedName:     types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name},
		DisruptionsAllowed: pdb.Status.DisruptionsAllowed,
	}
}

func keyOf(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}
