package uptodate

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TemplateHash identifies the part of a template whose change needs new Machines: the template's
// spec without the in-place fields (InPlaceFields) and providerID; template.metadata is left out
// too. The providerSpec value is hashed in canonical JSON (sorted keys), so the same value hashes
// the same however it was written. The hash is 10 characters from a consonant-and-digit alphabet;
// a MachineDeployment names its MachineSets <deployment>-<hash>, and a set whose template has the
// deployment's hash is its current one.
//
// A template without deletion settings and hooks hashes as it did when those were part of the
// hash, so the sets of such deployments keep their names; a set whose template has them is still
// found by comparing hashes, not names.
func TemplateHash(t *v1beta1.MachineTemplateSpec) string {
	b, err := json.Marshal(canonical(withoutInPlace(&t.Spec)))
	if err != nil {
		panic(fmt.Sprintf("marshalling a MachineSpec cannot fail: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return utilrand.SafeEncodeString(fmt.Sprintf("%016x", h.Sum64()))[:10]
}

// canonical returns spec with its providerSpec value re-encoded with sorted keys (spec itself when
// the value is not JSON: it is then hashed as written).
func canonical(spec *v1beta1.MachineSpec) *v1beta1.MachineSpec {
	if v := spec.ProviderSpec.Value; v != nil && len(v.Raw) > 0 {
		var decoded any
		if err := json.Unmarshal(v.Raw, &decoded); err == nil {
			if raw, err := json.Marshal(decoded); err == nil {
				spec.ProviderSpec.Value = &runtime.RawExtension{Raw: raw}
			}
		}
	}
	return spec
}

// hashJSON is the FNV-64a hash, in hex, of a decoded JSON value (maps marshal with sorted keys).
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = fmt.Appendf(nil, "%v", v)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%016x", h.Sum64())
}
