package sim

import (
	"reflect"
	"testing"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// A spec built with ProviderSpec.Raw is one the provider reads back unchanged, and its JSON is
// what a user writes by hand, so a template built in Go hashes like the same template in YAML.
func TestRawIsWhatTheProviderReads(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec ProviderSpec
		json string
	}{
		{name: "instance type", spec: ProviderSpec{InstanceType: "small"}, json: `{"instanceType":"small"}`},
		{name: "with tags", spec: ProviderSpec{InstanceType: "large", Tags: map[string]string{"team": "a"}}, json: `{"instanceType":"large","tags":{"team":"a"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := tc.spec.Raw()
			if string(raw.Raw) != tc.json {
				t.Errorf("Raw() = %s, want %s", raw.Raw, tc.json)
			}
			got, err := parseSpec(&v1beta1.Machine{Spec: v1beta1.MachineSpec{ProviderSpec: v1beta1.ProviderSpec{Value: raw}}})
			if err != nil {
				t.Fatalf("the provider refuses what Raw wrote: %v", err)
			}
			if !reflect.DeepEqual(got, tc.spec) {
				t.Errorf("the provider read %+v, want %+v", got, tc.spec)
			}
		})
	}
}
