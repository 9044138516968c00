package machinedrain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/drain"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// RuleName is how a MachineDrainRule is named in the drain's verdicts, conditions and events.
func RuleName(r *v1beta1.MachineDrainRule) string {
	return fmt.Sprintf("MachineDrainRule %s/%s", r.Namespace, r.Name)
}

// Rules returns the drain rules that apply to Machine m's Node: those of rules in m's namespace
// whose spec.machines select m (all of them when it is empty), as drain.PodRules named by
// RuleName, sorted by name. A rule whose selectors do not parse is an error naming the rule and
// the field; the caller does not drain with the others, since leaving a rule out could evict
// pods it protects.
func Rules(m *v1beta1.Machine, rules []v1beta1.MachineDrainRule) ([]drain.PodRule, error) {
	var out []drain.PodRule
	for i := range rules {
		r := &rules[i]
		if r.Namespace != m.Namespace {
			continue
		}
		selected, err := selectsMachine(r, m)
		if err != nil {
			return nil, err
		}
		if !selected {
			continue
		}
		pr := drain.PodRule{Name: RuleName(r), Behavior: drain.PodBehavior(r.Spec.Drain.Behavior)}
		if pr.Behavior == "" {
			pr.Behavior = drain.BehaviorDrain
		}
		if r.Spec.Drain.Order != nil {
			pr.Order = *r.Spec.Drain.Order
		}
		for j, p := range r.Spec.Pods {
			pods, err := selector(&p.Selector, r, fmt.Sprintf("spec.pods[%d].selector", j))
			if err != nil {
				return nil, err
			}
			ps := drain.PodSelector{Labels: pods}
			if p.NamespaceSelector != nil {
				if ps.Namespaces, err = selector(p.NamespaceSelector, r, fmt.Sprintf("spec.pods[%d].namespaceSelector", j)); err != nil {
					return nil, err
				}
			}
			pr.Pods = append(pr.Pods, ps)
		}
		out = append(out, pr)
	}
	slices.SortFunc(out, func(a, b drain.PodRule) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ReadRules lists the MachineDrainRules of m's namespace through reader (a manager's cached
// client: the caller needs RBAC to list and watch machinedrainrules) and returns Rules of them.
func ReadRules(ctx context.Context, reader client.Reader, m *v1beta1.Machine) ([]drain.PodRule, error) {
	list := &v1beta1.MachineDrainRuleList{}
	if err := reader.List(ctx, list, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the MachineDrainRules of namespace %s: %w", m.Namespace, err)
	}
	return Rules(m, list.Items)
}

// selectsMachine reports whether rule r applies to Machine m.
func selectsMachine(r *v1beta1.MachineDrainRule, m *v1beta1.Machine) (bool, error) {
	if len(r.Spec.Machines) == 0 {
		return true, nil
	}
	for i := range r.Spec.Machines {
		sel, err := selector(&r.Spec.Machines[i].Selector, r, fmt.Sprintf("spec.machines[%d].selector", i))
		if err != nil {
			return false, err
		}
		if sel.Matches(labels.Set(m.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

func selector(s *v1beta1.LabelSelector, r *v1beta1.MachineDrainRule, field string) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s.AsLabelSelector())
	if err != nil {
		return nil, fmt.Errorf("%s: %s is not a valid label selector: %w", RuleName(r), field, err)
	}
	return sel, nil
}
