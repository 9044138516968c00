package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// DrainRuleBuilder builds a MachineDrainRule.
type DrainRuleBuilder struct{ r *v1beta1.MachineDrainRule }

// DrainRule starts a MachineDrainRule with behavior Drain that selects every pod on the Nodes of
// every Machine of its namespace.
func DrainRule(namespace, name string) *DrainRuleBuilder {
	return &DrainRuleBuilder{r: &v1beta1.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1beta1.MachineDrainRuleSpec{Drain: v1beta1.MachineDrainRuleDrain{Behavior: v1beta1.DrainBehaviorDrain}},
	}}
}

// Behavior sets spec.drain.behavior.
func (b *DrainRuleBuilder) Behavior(v v1beta1.MachineDrainRuleBehavior) *DrainRuleBuilder {
	b.r.Spec.Drain.Behavior = v
	return b
}

// Order sets spec.drain.order.
func (b *DrainRuleBuilder) Order(n int32) *DrainRuleBuilder {
	b.r.Spec.Drain.Order = &n
	return b
}

// Pods adds a spec.pods entry selecting pods with these labels.
func (b *DrainRuleBuilder) Pods(matchLabels map[string]string) *DrainRuleBuilder {
	b.r.Spec.Pods = append(b.r.Spec.Pods, v1beta1.MachineDrainRulePods{Selector: v1beta1.LabelSelector{MatchLabels: matchLabels}})
	return b
}

// Machines adds a spec.machines entry selecting Machines with these labels.
func (b *DrainRuleBuilder) Machines(matchLabels map[string]string) *DrainRuleBuilder {
	b.r.Spec.Machines = append(b.r.Spec.Machines, v1beta1.MachineDrainRuleMachines{Selector: v1beta1.LabelSelector{MatchLabels: matchLabels}})
	return b
}

// Build returns the MachineDrainRule.
func (b *DrainRuleBuilder) Build() *v1beta1.MachineDrainRule { return b.r.DeepCopy() }
