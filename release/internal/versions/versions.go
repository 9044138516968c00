package versions

import (
	"fmt"
	"os"
	"slices"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// Stability says which changes a module's users must be ready for.
type Stability string

const (
	// Alpha modules may change anything between minor versions.
	Alpha Stability = "alpha"
	// Beta modules break their API only in a minor version, with a deprecation note.
	Beta Stability = "beta"
	// Stable modules (v1 and up) break their API only in a major version.
	Stable Stability = "stable"
)

// File is the repository-relative path of the manifest.
const File = "release/versions.yaml"

// Manifest is the content of release/versions.yaml.
type Manifest struct {
	// Source is the repository URL that images name as their source.
	Source string `json:"source"`
	// ImageRepository prefixes every image name (<repository>/<module>:<version>).
	ImageRepository string `json:"imageRepository"`
	// Modules lists the released modules.
	Modules []Module `json:"modules"`
}

// Module is one released module.
type Module struct {
	// Name is both the module's folder and its tag prefix (<name>/vX.Y.Z).
	Name string `json:"name"`
	// Version is the last released version, or the one a release commit is about to tag.
	Version string `json:"version"`
	// Stability is alpha, beta or stable.
	Stability Stability `json:"stability"`
	// Binaries are the commands under <name>/cmd/ that the release builds.
	Binaries []string `json:"binaries,omitempty"`
	// Image is the binary the module's image runs; empty for a module without an image.
	Image string `json:"image,omitempty"`
}

// Load reads and validates a manifest file.
func Load(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse decodes and validates a manifest.
func Parse(data []byte) (*Manifest, error) {
	var m Manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", File, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks that every module has a canonical version that agrees with its stability.
func (m *Manifest) Validate() error {
	seen := map[string]bool{}
	for _, mod := range m.Modules {
		if mod.Name == "" {
			return fmt.Errorf("%s: a module without a name", File)
		}
		if seen[mod.Name] {
			return fmt.Errorf("%s: module %s is listed twice", File, mod.Name)
		}
		seen[mod.Name] = true
		if err := CheckStability(mod.Version, mod.Stability); err != nil {
			return fmt.Errorf("%s: module %s: %w", File, mod.Name, err)
		}
		if mod.Image != "" && !slices.Contains(mod.Binaries, mod.Image) {
			return fmt.Errorf("%s: module %s: image %q is not one of its binaries %v", File, mod.Name, mod.Image, mod.Binaries)
		}
	}
	return nil
}

// CheckStability reports whether version is a canonical semantic version that a module of the
// given stability may carry: alpha and beta modules stay below v1, stable ones are v1 or later.
func CheckStability(version string, s Stability) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("version %q is not a canonical semantic version like v0.4.0", version)
	}
	major := semver.Major(version)
	switch s {
	case Alpha, Beta:
		if major != "v0" {
			return fmt.Errorf("an %s module must stay below v1 (version %s); mark it stable to release v1", s, version)
		}
	case Stable:
		if major == "v0" {
			return fmt.Errorf("a stable module must be v1 or later (version %s)", version)
		}
	default:
		return fmt.Errorf("stability %q is not alpha, beta or stable", s)
	}
	return nil
}

// Module returns the named module.
func (m *Manifest) Module(name string) (Module, bool) {
	for _, mod := range m.Modules {
		if mod.Name == name {
			return mod, true
		}
	}
	return Module{}, false
}

// Names lists the modules in manifest order.
func (m *Manifest) Names() []string {
	var names []string
	for _, mod := range m.Modules {
		names = append(names, mod.Name)
	}
	return names
}
