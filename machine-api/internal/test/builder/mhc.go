package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// MachineHealthCheckBuilder builds a MachineHealthCheck.
type MachineHealthCheckBuilder struct{ c *v1beta1.MachineHealthCheck }

// MachineHealthCheck starts a MachineHealthCheck selecting Machines with matchLabels, with no
// unhealthy conditions and the schema's defaults otherwise.
func MachineHealthCheck(namespace, name string, matchLabels map[string]string) *MachineHealthCheckBuilder {
	return &MachineHealthCheckBuilder{c: &v1beta1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1beta1.MachineHealthCheckSpec{Selector: v1beta1.LabelSelector{MatchLabels: matchLabels}},
	}}
}

// WithUnhealthyCondition adds an unhealthy condition: Node condition typ with status held for
// timeoutSeconds.
func (b *MachineHealthCheckBuilder) WithUnhealthyCondition(typ, status string, timeoutSeconds int32) *MachineHealthCheckBuilder {
	b.c.Spec.UnhealthyConditions = append(b.c.Spec.UnhealthyConditions,
		v1beta1.UnhealthyCondition{Type: typ, Status: status, TimeoutSeconds: timeoutSeconds})
	return b
}

// WithNodeStartupTimeout sets nodeStartupTimeoutSeconds.
func (b *MachineHealthCheckBuilder) WithNodeStartupTimeout(seconds int32) *MachineHealthCheckBuilder {
	b.c.Spec.NodeStartupTimeoutSeconds = &seconds
	return b
}

// WithMaxUnhealthy sets maxUnhealthy: "40%" or "3".
func (b *MachineHealthCheckBuilder) WithMaxUnhealthy(v string) *MachineHealthCheckBuilder {
	b.c.Spec.MaxUnhealthy = intOrString(v)
	return b
}

// WithUnhealthyRange sets unhealthyRange, "[min-max]".
func (b *MachineHealthCheckBuilder) WithUnhealthyRange(r string) *MachineHealthCheckBuilder {
	b.c.Spec.UnhealthyRange = r
	return b
}

// WithMaxInFlight sets maxInFlight: "50%" or "1".
func (b *MachineHealthCheckBuilder) WithMaxInFlight(v string) *MachineHealthCheckBuilder {
	b.c.Spec.MaxInFlight = intOrString(v)
	return b
}

// WithRemediationTemplate switches to external remediation with this template.
func (b *MachineHealthCheckBuilder) WithRemediationTemplate(apiVersion, kind, name string) *MachineHealthCheckBuilder {
	b.c.Spec.RemediationTemplate = &v1beta1.RemediationTemplateReference{APIVersion: apiVersion, Kind: kind, Name: name}
	return b
}

// WithUnhealthyMachineCondition adds a rule on the Machine's own condition typ with status held for
// timeoutSeconds.
func (b *MachineHealthCheckBuilder) WithUnhealthyMachineCondition(typ, status string, timeoutSeconds int32) *MachineHealthCheckBuilder {
	b.c.Spec.UnhealthyMachineConditions = append(b.c.Spec.UnhealthyMachineConditions,
		v1beta1.UnhealthyCondition{Type: typ, Status: status, TimeoutSeconds: timeoutSeconds})
	return b
}

// WithRemediationLimits sets spec.remediation.
func (b *MachineHealthCheckBuilder) WithRemediationLimits(l v1beta1.RemediationLimits) *MachineHealthCheckBuilder {
	b.c.Spec.Remediation = &l
	return b
}

// WithAnnotations sets the check's annotations (for example the paused annotation).
func (b *MachineHealthCheckBuilder) WithAnnotations(a map[string]string) *MachineHealthCheckBuilder {
	b.c.Annotations = a
	return b
}

// Build returns the MachineHealthCheck.
func (b *MachineHealthCheckBuilder) Build() *v1beta1.MachineHealthCheck { return b.c.DeepCopy() }

// intOrString is v as an integer when it parses as one, else as a string ("40%").
func intOrString(v string) *intstr.IntOrString {
	x := intstr.Parse(v)
	return &x
}
