package apicompat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/mod/modfile"
	"golang.org/x/tools/go/packages"

	"machineapi.dev/release/internal/versions"
)

// Report lists the API changes between two versions of a module, one line per change.
type Report struct {
	// Incompatible changes can break a consumer's build.
	Incompatible []string `json:"incompatible,omitempty"`
	// Compatible changes only add to the API.
	Compatible []string `json:"compatible,omitempty"`
}

// Change is the kind of change the report shows: Breaking, Addition or, without API changes, Fix.
func (r Report) Change() versions.Change {
	switch {
	case len(r.Incompatible) > 0:
		return versions.Breaking
	case len(r.Compatible) > 0:
		return versions.Addition
	default:
		return versions.Fix
	}
}

// Load type-checks the exported packages of the module whose go.mod is in dir.
func Load(ctx context.Context, dir string) (*apidiff.Module, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return nil, fmt.Errorf("%s/go.mod names no module", dir)
	}
	cfg := &packages.Config{
		Context: ctx,
		Mode:    packages.NeedName | packages.NeedTypes,
		Dir:     dir,
		Env:     append(os.Environ(), "GOWORK=off"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("loading the packages of %s: %w", path, err)
	}
	m := &apidiff.Module{Path: path}
	var errs []string
	for _, p := range pkgs {
		if p.Name == "main" || isInternal(p.PkgPath) {
			continue
		}
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Types != nil {
			m.Packages = append(m.Packages, p.Types)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("type-checking %s in %s:\n  %s", path, dir, strings.Join(errs, "\n  "))
	}
	return m, nil
}

func isInternal(pkgPath string) bool {
	return slices.Contains(strings.Split(pkgPath, "/"), "internal")
}

// Compare reports the API changes from old to new, sorted.
func Compare(old, new *apidiff.Module) Report {
	var r Report
	for _, c := range apidiff.ModuleChanges(old, new).Changes {
		if c.Compatible {
			r.Compatible = append(r.Compatible, c.Message)
		} else {
			r.Incompatible = append(r.Incompatible, c.Message)
		}
	}
	slices.Sort(r.Compatible)
	slices.Sort(r.Incompatible)
	return r
}

// CompareDirs loads the modules in two folders and compares them.
func CompareDirs(ctx context.Context, oldDir, newDir string) (Report, error) {
	old, err := Load(ctx, oldDir)
	if err != nil {
		return Report{}, err
	}
	new, err := Load(ctx, newDir)
	if err != nil {
		return Report{}, err
	}
	return Compare(old, new), nil
}
