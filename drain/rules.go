package drain

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodBehavior is what a drain does with a pod it would otherwise evict.
type PodBehavior string

const (
	// BehaviorDrain: the pod is evicted, in its order group (the default).
	BehaviorDrain PodBehavior = "Drain"
	// BehaviorSkip: the pod stays on the node and the drain does not wait for it.
	BehaviorSkip PodBehavior = "Skip"
	// BehaviorWaitCompleted: the pod is never evicted; the drain waits until it has completed
	// (phase Succeeded or Failed) or is gone.
	BehaviorWaitCompleted PodBehavior = "WaitCompleted"
)

// Values of the pod label Options.SkipLabelKey (machine.machineapi.dev/drain by default) besides
// Options.SkipLabelValue. The label overrides every PodRule for its pod. Label values cannot hold
// "=", so an order group is written order-<n>.
const (
	// WaitCompletedLabelValue makes the pod BehaviorWaitCompleted.
	WaitCompletedLabelValue = "wait-completed"
	// OrderLabelValuePrefix followed by a non-negative integer puts the pod in that order group,
	// with BehaviorDrain (for example order-10).
	OrderLabelValuePrefix = "order-"
)

// PodRule says how a drain treats the pods it selects. A caller translates its own rule objects
// (a Machine's MachineDrainRules) into PodRules and passes them in Step.Rules; this package knows
// nothing of where they come from.
type PodRule struct {
	// Name identifies the rule in verdicts and messages, for example
	// "MachineDrainRule default/databases". Rules of one step have distinct names.
	Name string
	// Behavior is what happens to the pods the rule selects.
	Behavior PodBehavior
	// Order is the order group of the pods the rule selects, when Behavior is BehaviorDrain.
	// Groups are drained lowest first; a group is finished before the next one starts.
	Order int32
	// Pods select the pods the rule applies to: a pod is selected when any entry selects it.
	// Empty selects every pod.
	Pods []PodSelector
}

// PodSelector selects pods by their labels and the labels of their namespace; both must match.
type PodSelector struct {
	// Labels select by the pod's labels; nil selects every pod.
	Labels labels.Selector
	// Namespaces select by the labels of the pod's namespace; nil selects every namespace.
	Namespaces labels.Selector
}

// needsNamespaceLabels reports whether a rule selects pods by the labels of their namespace, so
// a step must read the namespaces of the node's pods.
func needsNamespaceLabels(rules []PodRule) bool {
	for _, r := range rules {
		for _, s := range r.Pods {
			if s.Namespaces != nil && !s.Namespaces.Empty() {
				return true
			}
		}
	}
	return false
}

// selects reports whether the rule selects pod, whose namespace carries nsLabels.
func (r *PodRule) selects(pod *corev1.Pod, nsLabels map[string]string) bool {
	if len(r.Pods) == 0 {
		return true
	}
	for _, s := range r.Pods {
		if (s.Labels == nil || s.Labels.Matches(labels.Set(pod.Labels))) &&
			(s.Namespaces == nil || s.Namespaces.Matches(labels.Set(nsLabels))) {
			return true
		}
	}
	return false
}

// podTreatment is how the rules and the override label say a pod is drained.
type podTreatment struct {
	behavior PodBehavior
	order    int32
	// source names what decided it: a rule's Name, the label ("label key=value"), or "" for the
	// default.
	source string
	// byLabel: the override label decided it.
	byLabel bool
}

// treatmentOf resolves how pod is drained, deterministically:
//
//  1. the override label (Options.SkipLabelKey) decides alone when its value is SkipLabelValue,
//     WaitCompletedLabelValue or order-<n>; another value is ignored, and said so in the source;
//  2. otherwise, of the rules that select the pod, the most protective wins: Skip before
//     WaitCompleted before Drain, and among Drain rules the highest order (drained last); a tie
//     goes to the rule whose name sorts first;
//  3. otherwise the pod is drained in order group 0.
func treatmentOf(o Options, rules []PodRule, pod *corev1.Pod, nsLabels map[string]string) podTreatment {
	ignored := ""
	if v, ok := pod.Labels[o.SkipLabelKey]; ok {
		label := fmt.Sprintf("label %s=%s", o.SkipLabelKey, v)
		if t, ok := parseOverride(o, v); ok {
			t.source, t.byLabel = label, true
			return t
		}
		ignored = fmt.Sprintf("%s ignored (use %s, %s or %s<n>)", label, o.SkipLabelValue, WaitCompletedLabelValue, OrderLabelValuePrefix)
	}
	var best *PodRule
	for i := range rules {
		r := &rules[i]
		if r.selects(pod, nsLabels) && (best == nil || moreProtective(r, best)) {
			best = r
		}
	}
	t := podTreatment{behavior: BehaviorDrain}
	if best != nil {
		t = podTreatment{behavior: best.Behavior, source: best.Name}
		if best.Behavior == BehaviorDrain {
			t.order = best.Order
		}
	}
	switch {
	case ignored != "" && t.source != "":
		t.source = ignored + "; " + t.source
	case ignored != "":
		t.source = ignored
	}
	return t
}

// parseOverride reads a value of the override label.
func parseOverride(o Options, v string) (podTreatment, bool) {
	switch {
	case v == o.SkipLabelValue:
		return podTreatment{behavior: BehaviorSkip}, true
	case v == WaitCompletedLabelValue:
		return podTreatment{behavior: BehaviorWaitCompleted}, true
	case strings.HasPrefix(v, OrderLabelValuePrefix):
		n, err := strconv.ParseInt(strings.TrimPrefix(v, OrderLabelValuePrefix), 10, 32)
		if err != nil || n < 0 {
			return podTreatment{}, false
		}
		return podTreatment{behavior: BehaviorDrain, order: int32(n)}, true
	}
	return podTreatment{}, false
}

// protection ranks behaviours: the higher, the less the drain disturbs the pod.
var protection = map[PodBehavior]int{BehaviorDrain: 0, BehaviorWaitCompleted: 1, BehaviorSkip: 2}

// moreProtective reports whether rule a wins over rule b for a pod both select.
func moreProtective(a, b *PodRule) bool {
	if c := cmp.Compare(protection[a.Behavior], protection[b.Behavior]); c != 0 {
		return c > 0
	}
	if a.Behavior == BehaviorDrain && a.Order != b.Order {
		return a.Order > b.Order
	}
	return a.Name < b.Name
}

// validateRules returns an error naming the first rule that cannot be used.
func validateRules(rules []PodRule) error {
	for _, r := range rules {
		if !slices.Contains([]PodBehavior{BehaviorDrain, BehaviorSkip, BehaviorWaitCompleted}, r.Behavior) {
			return fmt.Errorf("drain rule %q: unknown behavior %q (use Drain, Skip or WaitCompleted)", r.Name, r.Behavior)
		}
		if r.Order < 0 {
			return fmt.Errorf("drain rule %q: order %d is negative", r.Name, r.Order)
		}
	}
	return nil
}
