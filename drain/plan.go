package drain

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	kubectldrain "k8s.io/kubectl/pkg/drain"
)

// observe reads the node's pods, kubectl's verdict on them, the budgets that may protect them and,
// when a rule selects pods by their namespace's labels, the pods' namespaces.
func (d *Drainer) observe(ctx context.Context, h *kubectldrain.Helper, node *corev1.Node, rules []PodRule) (Observation, error) {
	obs := Observation{Node: node}
	pods, err := d.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String(),
	})
	if err != nil {
		return obs, fmt.Errorf("listing the pods of node %s: %w", node.Name, err)
	}
	view, err := viewThroughKubectl(h, node.Name)
	if err != nil {
		return obs, err
	}
	obs.Pods = view.observedPods(pods.Items)
	var namespaces []string
	for _, pod := range view.deletable {
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
		obs.PodDisruptionBudgets = append(obs.PodDisruptionBudgets, pdbs.Items...)
	}
	if needsNamespaceLabels(rules) {
		obs.NamespaceLabels = map[string]map[string]string{}
		for _, op := range obs.Pods {
			ns := op.Pod.Namespace
			if _, ok := obs.NamespaceLabels[ns]; ok {
				continue
			}
			got, err := d.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return obs, fmt.Errorf("reading namespace %s for the drain rules that select pods by namespace (the drainer needs permission to get namespaces): %w", ns, err)
			}
			obs.NamespaceLabels[ns] = got.Labels
		}
	}
	obs.Now = d.opts.Clock.Now()
	return obs, nil
}

// observedPods joins the pods listed on the node with kubectl's verdict on each. A pod kubectl
// would evict is taken as kubectl read it, which may be newer.
func (v *kubectlView) observedPods(listed []corev1.Pod) []ObservedPod {
	all := map[types.NamespacedName]corev1.Pod{}
	for _, pod := range listed {
		all[keyOf(&pod)] = pod
	}
	for key, pod := range v.deletable {
		all[key] = pod
	}
	out := make([]ObservedPod, 0, len(all))
	for key, pod := range all {
		_, evict := v.deletable[key]
		out = append(out, ObservedPod{Pod: pod, Kubectl: KubectlVerdict{Evict: evict, Refusal: v.refusals[key], Warning: v.warnings[key]}})
	}
	return out
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
