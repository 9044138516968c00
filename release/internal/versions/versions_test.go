package versions

import (
	"fmt"
	"strings"
	"testing"
)

func TestNext(t *testing.T) {
	tests := map[string]struct {
		version string
		change  Change
		want    string
	}{
		"v0 breaking change is a minor bump":    {"v0.4.2", Breaking, "v0.5.0"},
		"v0 addition is a patch bump":           {"v0.4.2", Addition, "v0.4.3"},
		"v0 fix is a patch bump":                {"v0.4.2", Fix, "v0.4.3"},
		"nothing changed keeps the version":     {"v0.4.2", NoChange, "v0.4.2"},
		"v1 breaking change is a major bump":    {"v1.3.1", Breaking, "v2.0.0"},
		"v1 addition is a minor bump":           {"v1.3.1", Addition, "v1.4.0"},
		"v1 fix is a patch bump":                {"v1.3.1", Fix, "v1.3.2"},
		"a pre-release is bumped from its core": {"v0.4.0-rc.1", Fix, "v0.4.1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Next(tc.version, tc.change)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Next(%s, %v) = %s, want %s", tc.version, tc.change, got, tc.want)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	tests := map[string]struct {
		yaml    string
		wantErr string
	}{
		"beta module at v1": {
			"modules: [{name: a, version: v1.0.0, stability: beta}]", "must stay below v1"},
		"stable module at v0": {
			"modules: [{name: a, version: v0.3.0, stability: stable}]", "v1 or later"},
		"non-canonical version": {
			"modules: [{name: a, version: v0.3, stability: alpha}]", "not a canonical"},
		"unknown stability": {
			"modules: [{name: a, version: v0.3.0, stability: gamma}]", "not alpha, beta or stable"},
		"image that is not a binary": {
			"modules: [{name: a, version: v0.3.0, stability: beta, binaries: [x], image: y}]", "not one of its binaries"},
		"module listed twice": {
			"modules: [{name: a, version: v0.3.0, stability: beta}, {name: a, version: v0.3.0, stability: beta}]", "listed twice"},
		"unknown field": {
			"modules: [{name: a, version: v0.3.0, stability: beta, versoin: v1}]", "unknown field"}, //nolint:misspell // the misspelled key is what the case tests
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The repository's own manifest must always load.
func TestRepositoryManifest(t *testing.T) {
	m, err := Load("../../versions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drain", "nodelink", "machine-api", "cluster-api", "release"} {
		if _, ok := m.Module(want); !ok {
			t.Errorf("versions.yaml does not list %s", want)
		}
	}
	if mod, _ := m.Module("cluster-api"); mod.Stability != Alpha {
		t.Errorf("cluster-api stability = %s, want alpha", mod.Stability)
	}
}

func ExampleNext() {
	for _, c := range []Change{Fix, Addition, Breaking} {
		v0, _ := Next("v0.4.2", c)
		v1, _ := Next("v1.4.2", c)
		fmt.Printf("%-20s v0.4.2 -> %s, v1.4.2 -> %s\n", c, v0, v1)
	}
	// Output:
	// fix                  v0.4.2 -> v0.4.3, v1.4.2 -> v1.4.3
	// compatible addition  v0.4.2 -> v0.4.3, v1.4.2 -> v1.5.0
	// incompatible change  v0.4.2 -> v0.5.0, v1.4.2 -> v2.0.0
}
