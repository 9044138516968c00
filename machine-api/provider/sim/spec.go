package sim

import (
	"encoding/json"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// ProviderSpec is what the sim provider reads from spec.providerSpec.value.
type ProviderSpec struct {
	// InstanceType is small (default), medium or large. It can be changed in place, with a reboot
	// (see UpdateInPlace).
	InstanceType string `json:"instanceType,omitempty"`
	// Tags are key-value labels recorded on the instance, as a cloud's instance tags. They can be
	// changed in place without disturbing the instance.
	Tags map[string]string `json:"tags,omitempty"`
}

// Raw encodes s as a providerSpec value: spec.providerSpec.value of a Machine or a template, or
// spec.providerSpec of a MachineClass, for code that builds them in Go (tests, benchmarks, tools)
// instead of writing the JSON by hand.
func (s ProviderSpec) Raw() *runtime.RawExtension {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string and a map of strings always encode
	}
	return &runtime.RawExtension{Raw: raw}
}

// instanceTypes are the sizes the sim offers, used when no MachineClass nodeTemplate gives a capacity.
var instanceTypes = map[string]corev1.ResourceList{
	"small":  {corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
	"medium": {corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
	"large":  {corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("250")},
}

func offered() string {
	names := make([]string, 0, len(instanceTypes))
	for n := range instanceTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// parseSpec reads the Machine's (resolved) providerSpec, returning an InvalidConfiguration error
// that says what to change.
func parseSpec(m *v1beta1.Machine) (ProviderSpec, error) {
	spec := ProviderSpec{}
	if v := m.Spec.ProviderSpec.Value; v != nil && len(v.Raw) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(v.Raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return spec, provider.InvalidConfiguration("providerSpec.value: %v; the sim provider accepts {\"instanceType\": one of %s, \"tags\": {\"key\": \"value\"}}", err, offered())
		}
	}
	if spec.InstanceType == "" {
		spec.InstanceType = "small"
	}
	if _, ok := instanceTypes[spec.InstanceType]; !ok {
		return spec, provider.InvalidConfiguration("providerSpec.value.instanceType %q is not offered by the sim provider; use one of %s", spec.InstanceType, offered())
	}
	return spec, nil
}

// capacity is the MachineClass nodeTemplate's capacity when there is one, else the instance type's.
// A nodeTemplate that names no pod capacity gets a kubelet's default of 110, or the scheduler would
// place no pod on the Node.
func capacity(class *v1beta1.MachineClass, spec ProviderSpec) corev1.ResourceList {
	if class != nil && class.Spec.NodeTemplate != nil && len(class.Spec.NodeTemplate.Capacity) > 0 {
		c := class.Spec.NodeTemplate.Capacity.DeepCopy()
		if _, ok := c[corev1.ResourcePods]; !ok {
			c[corev1.ResourcePods] = resource.MustParse("110")
		}
		return c
	}
	return instanceTypes[spec.InstanceType].DeepCopy()
}
