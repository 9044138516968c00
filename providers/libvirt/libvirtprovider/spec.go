package libvirtprovider

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

var specPath = field.NewPath("providerSpec", "value")

// parseSpec reads, defaults and validates the Machine's (resolved) providerSpec, refusing unknown
// fields. Its errors are InvalidConfiguration errors saying what to change.
func parseSpec(m *v1beta1.Machine) (api.ProviderSpec, error) {
	var spec api.ProviderSpec
	if v := m.Spec.ProviderSpec.Value; v == nil || len(v.Raw) == 0 {
		return spec, provider.InvalidConfiguration("%s is empty: the libvirt provider needs at least image.volume and network (docs/providers/libvirt.md)", specPath)
	} else {
		dec := json.NewDecoder(bytes.NewReader(v.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return spec, provider.InvalidConfiguration("%s: %v (see docs/providers/libvirt.md for the fields)", specPath, err)
		}
	}
	spec.Default()
	if errs := spec.Validate(specPath); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return spec, provider.InvalidConfiguration("%s", strings.Join(msgs, "; "))
	}
	return spec, nil
}

// recordedSpec reads the Machine's providerSpec leniently, defaulted: what its instance was made
// from, which may no longer pass today's validation and must still be read.
func recordedSpec(m *v1beta1.Machine) api.ProviderSpec {
	var spec api.ProviderSpec
	if v := m.Spec.ProviderSpec.Value; v != nil {
		_ = json.Unmarshal(v.Raw, &spec)
	}
	spec.Default()
	return spec
}

// locateSpec reads only where a Machine's instance would be: the URI and the pool, leniently (a
// providerSpec edited since the instance was made may no longer parse, and the instance must
// still be found). The URI of status.providerStatus, where Create made the instance, wins.
func locateSpec(m *v1beta1.Machine) (uri, pool string) {
	spec := recordedSpec(m)
	if s := m.Status.ProviderStatus; s != nil && len(s.Raw) > 0 {
		var st api.ProviderStatus
		if json.Unmarshal(s.Raw, &st) == nil && st.URI != "" {
			spec.URI = st.URI
		}
	}
	return spec.URI, spec.StoragePool
}
