package versions

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Change is the kind of change a release carries, from least to most disruptive.
type Change int

const (
	// NoChange means nothing touched the module since its last release.
	NoChange Change = iota
	// Fix means the module changed without changing its exported API.
	Fix
	// Addition means the exported API only grew.
	Addition
	// Breaking means an exported API change can break a consumer's build.
	Breaking
)

func (c Change) String() string {
	switch c {
	case NoChange:
		return "no change"
	case Fix:
		return "fix"
	case Addition:
		return "compatible addition"
	case Breaking:
		return "incompatible change"
	}
	return fmt.Sprintf("Change(%d)", int(c))
}

// Bump names the part of a version a release increments.
type Bump string

const (
	// None keeps the version.
	None Bump = "none"
	// Patch increments Z in vX.Y.Z.
	Patch Bump = "patch"
	// Minor increments Y and resets Z.
	Minor Bump = "minor"
	// Major increments X and resets Y and Z.
	Major Bump = "major"
)

// BumpFor returns the bump a change needs on top of version (see the package doc for the rules).
func BumpFor(version string, c Change) Bump {
	v0 := semver.Major(version) == "v0"
	switch c {
	case NoChange:
		return None
	case Fix:
		return Patch
	case Addition:
		if v0 {
			return Patch
		}
		return Minor
	default:
		if v0 {
			return Minor
		}
		return Major
	}
}

// Next returns version with the bump that change c needs applied.
func Next(version string, c Change) (string, error) {
	return Apply(version, BumpFor(version, c))
}

// Apply increments a canonical version vX.Y.Z (a pre-release or build suffix is dropped).
func Apply(version string, b Bump) (string, error) {
	if !semver.IsValid(version) {
		return "", fmt.Errorf("%q is not a semantic version", version)
	}
	core := strings.TrimPrefix(semver.Canonical(version), "v")
	core, _, _ = strings.Cut(core, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return "", fmt.Errorf("%q is not a semantic version: %w", version, err)
		}
		n[i] = v
	}
	switch b {
	case None:
		return version, nil
	case Patch:
		n[2]++
	case Minor:
		n[1], n[2] = n[1]+1, 0
	case Major:
		n[0], n[1], n[2] = n[0]+1, 0, 0
	default:
		return "", fmt.Errorf("unknown bump %q", b)
	}
	return fmt.Sprintf("v%d.%d.%d", n[0], n[1], n[2]), nil
}

// MajorSuffix returns the module path suffix a version needs: "" for v0 and v1, "/vN" from v2 on.
func MajorSuffix(version string) string {
	switch m := semver.Major(version); m {
	case "v0", "v1", "":
		return ""
	default:
		return "/" + m
	}
}

// MarshalText writes the change as its name, for JSON plans.
func (c Change) MarshalText() ([]byte, error) { return []byte(c.String()), nil }
