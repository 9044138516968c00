package machinedeployment

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// templateHash identifies the part of a template whose change needs new Machines: the template's
// spec without spec.metadata and spec.taints (which reach existing Machines and Nodes in place).
// template.metadata is left out too. The providerSpec value is hashed in canonical JSON (sorted
// keys), so the same value hashes the same however it was written. The hash is 10 characters
// from a consonant-and-digit alphabet, and names the MachineSet: <deployment>-<hash>.
func templateHash(t *v1beta1.MachineTemplateSpec) string {
	spec := t.Spec.DeepCopy()
	spec.Metadata = v1beta1.ObjectMeta{}
	spec.Taints = nil
	spec.ProviderID = ""
	if v := spec.ProviderSpec.Value; v != nil && len(v.Raw) > 0 {
		var decoded any
		if err := json.Unmarshal(v.Raw, &decoded); err == nil {
			if raw, err := json.Marshal(decoded); err == nil {
				spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
			}
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("marshalling a MachineSpec cannot fail: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return utilrand.SafeEncodeString(fmt.Sprintf("%016x", h.Sum64()))[:10]
}
