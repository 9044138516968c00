package builder

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider/sim"
)

// PoolLabel is the label the set and deployment builders select their Machines by; its value is
// the object's name.
const PoolLabel = "example.com/pool"

// simTemplate is a template for the simulated provider whose labels are {PoolLabel: pool}.
func simTemplate(pool string) v1beta1.MachineTemplateSpec {
	t := v1beta1.MachineTemplateSpec{Metadata: v1beta1.ObjectMeta{Labels: map[string]string{PoolLabel: pool}}}
	templateOptions{&t}.instanceType("small")
	return t
}

// templateOptions are the template settings shared by sets and deployments.
type templateOptions struct{ t *v1beta1.MachineTemplateSpec }

func (o templateOptions) instanceType(t string) {
	o.t.Spec.ProviderSpec = v1beta1.ProviderSpec{Value: sim.ProviderSpec{InstanceType: t}.Raw()}
}

func (o templateOptions) labels(l map[string]string) {
	maps.Copy(o.t.Metadata.Labels, l)
}

func (o templateOptions) annotations(a map[string]string) {
	if o.t.Metadata.Annotations == nil {
		o.t.Metadata.Annotations = map[string]string{}
	}
	maps.Copy(o.t.Metadata.Annotations, a)
}

// MachineSetBuilder builds a MachineSet.
type MachineSetBuilder struct{ s *v1beta1.MachineSet }

// MachineSet starts a MachineSet of replicas sim Machines (instance type small), selecting them by
// PoolLabel=name.
func MachineSet(namespace, name string, replicas int32) *MachineSetBuilder {
	return &MachineSetBuilder{s: &v1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1beta1.MachineSetSpec{
			Replicas: &replicas,
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{PoolLabel: name}},
			Template: simTemplate(name),
		},
	}}
}

func (b *MachineSetBuilder) tmpl() templateOptions { return templateOptions{&b.s.Spec.Template} }

// WithDeletePolicy sets spec.deletePolicy.
func (b *MachineSetBuilder) WithDeletePolicy(p v1beta1.DeletePolicy) *MachineSetBuilder {
	b.s.Spec.DeletePolicy = p
	return b
}

// WithMinReadySeconds sets spec.minReadySeconds.
func (b *MachineSetBuilder) WithMinReadySeconds(n int32) *MachineSetBuilder {
	b.s.Spec.MinReadySeconds = n
	return b
}

// WithInstanceType sets the template's sim instance type.
func (b *MachineSetBuilder) WithInstanceType(t string) *MachineSetBuilder {
	b.tmpl().instanceType(t)
	return b
}

// WithTemplateLabels adds labels to the template (the selector's stay).
func (b *MachineSetBuilder) WithTemplateLabels(l map[string]string) *MachineSetBuilder {
	b.tmpl().labels(l)
	return b
}

// WithTemplateAnnotations adds annotations to the template.
func (b *MachineSetBuilder) WithTemplateAnnotations(a map[string]string) *MachineSetBuilder {
	b.tmpl().annotations(a)
	return b
}

// WithNodeLabels sets the template's spec.metadata.labels (labels for the Nodes).
func (b *MachineSetBuilder) WithNodeLabels(l map[string]string) *MachineSetBuilder {
	b.s.Spec.Template.Spec.Metadata.Labels = l
	return b
}

// WithTaints sets the template's spec.taints.
func (b *MachineSetBuilder) WithTaints(t ...corev1.Taint) *MachineSetBuilder {
	b.s.Spec.Template.Spec.Taints = machineTaints(t)
	return b
}

// WithAnnotations sets the MachineSet's own annotations.
func (b *MachineSetBuilder) WithAnnotations(a map[string]string) *MachineSetBuilder {
	b.s.Annotations = a
	return b
}

// Build returns the MachineSet.
func (b *MachineSetBuilder) Build() *v1beta1.MachineSet { return b.s.DeepCopy() }

// MachineDeploymentBuilder builds a MachineDeployment.
type MachineDeploymentBuilder struct{ d *v1beta1.MachineDeployment }

// MachineDeployment starts a MachineDeployment of replicas sim Machines (instance type small),
// selecting them by PoolLabel=name, with the schema's default strategy (RollingUpdate, maxSurge 1,
// maxUnavailable 0).
func MachineDeployment(namespace, name string, replicas int32) *MachineDeploymentBuilder {
	return &MachineDeploymentBuilder{d: &v1beta1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1beta1.MachineDeploymentSpec{
			Replicas: &replicas,
			Selector: v1beta1.LabelSelector{MatchLabels: map[string]string{PoolLabel: name}},
			Template: simTemplate(name),
		},
	}}
}

func (b *MachineDeploymentBuilder) tmpl() templateOptions { return templateOptions{&b.d.Spec.Template} }

// WithStrategy sets spec.strategy.type.
func (b *MachineDeploymentBuilder) WithStrategy(t v1beta1.MachineDeploymentStrategyType) *MachineDeploymentBuilder {
	b.d.Spec.Strategy.Type = t
	return b
}

// WithRollingUpdate sets RollingUpdate with maxSurge and maxUnavailable ("1", "25%").
func (b *MachineDeploymentBuilder) WithRollingUpdate(maxSurge, maxUnavailable string) *MachineDeploymentBuilder {
	s, u := intstr.Parse(maxSurge), intstr.Parse(maxUnavailable)
	b.d.Spec.Strategy = v1beta1.MachineDeploymentStrategy{
		Type:          v1beta1.RollingUpdateStrategy,
		RollingUpdate: &v1beta1.MachineRollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u},
	}
	return b
}

// WithInstanceType sets the template's sim instance type.
func (b *MachineDeploymentBuilder) WithInstanceType(t string) *MachineDeploymentBuilder {
	b.tmpl().instanceType(t)
	return b
}

// WithTemplateLabels adds labels to the template (the selector's stay).
func (b *MachineDeploymentBuilder) WithTemplateLabels(l map[string]string) *MachineDeploymentBuilder {
	b.tmpl().labels(l)
	return b
}

// WithTemplateAnnotations adds annotations to the template.
func (b *MachineDeploymentBuilder) WithTemplateAnnotations(a map[string]string) *MachineDeploymentBuilder {
	b.tmpl().annotations(a)
	return b
}

// WithNodeLabels sets the template's spec.metadata.labels (labels for the Nodes).
func (b *MachineDeploymentBuilder) WithNodeLabels(l map[string]string) *MachineDeploymentBuilder {
	b.d.Spec.Template.Spec.Metadata.Labels = l
	return b
}

// WithMachineClass refers the template's providerSpec to a MachineClass.
func (b *MachineDeploymentBuilder) WithMachineClass(name string) *MachineDeploymentBuilder {
	b.d.Spec.Template.Spec.ProviderSpec = v1beta1.ProviderSpec{MachineClass: &v1beta1.MachineClassReference{Name: name}}
	return b
}

// WithDeletion sets the template's spec.deletion.
func (b *MachineDeploymentBuilder) WithDeletion(d v1beta1.MachineDeletionSpec) *MachineDeploymentBuilder {
	b.d.Spec.Template.Spec.Deletion = &d
	return b
}

// WithRollout sets spec.rollout.
func (b *MachineDeploymentBuilder) WithRollout(r v1beta1.MachineDeploymentRollout) *MachineDeploymentBuilder {
	b.d.Spec.Rollout = &r
	return b
}

// WithMinReadySeconds sets spec.minReadySeconds.
func (b *MachineDeploymentBuilder) WithMinReadySeconds(n int32) *MachineDeploymentBuilder {
	b.d.Spec.MinReadySeconds = &n
	return b
}

// WithProgressDeadlineSeconds sets spec.progressDeadlineSeconds.
func (b *MachineDeploymentBuilder) WithProgressDeadlineSeconds(n int32) *MachineDeploymentBuilder {
	b.d.Spec.ProgressDeadlineSeconds = &n
	return b
}

// WithRevisionHistoryLimit sets spec.revisionHistoryLimit.
func (b *MachineDeploymentBuilder) WithRevisionHistoryLimit(n int32) *MachineDeploymentBuilder {
	b.d.Spec.RevisionHistoryLimit = &n
	return b
}

// Paused sets spec.paused.
func (b *MachineDeploymentBuilder) Paused() *MachineDeploymentBuilder {
	b.d.Spec.Paused = true
	return b
}

// WithAnnotations sets the MachineDeployment's own annotations.
func (b *MachineDeploymentBuilder) WithAnnotations(a map[string]string) *MachineDeploymentBuilder {
	b.d.Annotations = a
	return b
}

// Build returns the MachineDeployment.
func (b *MachineDeploymentBuilder) Build() *v1beta1.MachineDeployment { return b.d.DeepCopy() }
