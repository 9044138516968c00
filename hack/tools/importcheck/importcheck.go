package importcheck

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// RepoPrefix is the import path prefix every module of this repository shares.
const RepoPrefix = "machineapi.dev/"

// allowedModules maps each released module to the repository modules it may import.
var allowedModules = map[string][]string{
	"machineapi.dev/drain":       nil,
	"machineapi.dev/nodelink":    nil,
	"machineapi.dev/machine-api": {"machineapi.dev/drain", "machineapi.dev/nodelink"},
	"machineapi.dev/cluster-api": {"machineapi.dev/machine-api", "machineapi.dev/drain", "machineapi.dev/nodelink"},
	"machineapi.dev/release":     nil,
}

// Violation is one import that breaks a rule.
type Violation struct {
	File   string // path relative to the repository root
	Import string
	Rule   string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s imports %q: %s", v.File, v.Import, v.Rule)
}

// Check walks every Go file under root and returns the imports that break the dependency rules,
// sorted by file. Folders named testdata, vendor or starting with "." or "_" are skipped, as are
// bin/ and .local/.
func Check(root string) ([]Violation, error) {
	var out []Violation
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || name == "bin" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		vs, err := checkFile(root, filepath.ToSlash(rel))
		out = append(out, vs...)
		return err
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, err
}

func checkFile(root, rel string) ([]Violation, error) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", rel, err)
	}
	module, pkgDir, err := owningModule(root, rel)
	if err != nil {
		return nil, err
	}
	var out []Violation
	for _, spec := range f.Imports {
		imp, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: bad import %s: %w", rel, spec.Path.Value, err)
		}
		if rule := broken(module, pkgDir, imp); rule != "" {
			out = append(out, Violation{File: rel, Import: imp, Rule: rule})
		}
	}
	return out, nil
}

// broken returns the rule that importing imp from package directory pkgDir (relative to the
// module root) of module breaks, or "".
func broken(module, pkgDir, imp string) string {
	if strings.HasPrefix(imp, "k8s.io/kubectl") && module != "machineapi.dev/drain" {
		return "only the drain module may import k8s.io/kubectl; use machineapi.dev/drain instead"
	}
	if module == "machineapi.dev/machine-api" && strings.HasPrefix(pkgDir, "examples/") {
		// Example providers are their own modules, but they are checked as consumers here.
		if strings.HasPrefix(imp, RepoPrefix) && imp != "machineapi.dev/machine-api" &&
			!strings.HasPrefix(imp, "machineapi.dev/machine-api/") {
			return "a provider imports only machineapi.dev/machine-api from this repository"
		}
		return ""
	}
	if strings.HasPrefix(module, RepoPrefix+"provider-") && strings.HasPrefix(imp, RepoPrefix) && imp != module &&
		!strings.HasPrefix(imp, module+"/") && imp != "machineapi.dev/machine-api" && !strings.HasPrefix(imp, "machineapi.dev/machine-api/") {
		// Providers (providers/<name>, machineapi.dev/provider-<name>) are shaped as one outside
		// this repository would be.
		return "a provider imports only machineapi.dev/machine-api from this repository"
	}
	if isAPIDir(pkgDir) && !apiImportAllowed(imp) {
		return "packages under api/ import only the standard library, k8s.io/api, k8s.io/apimachinery and other api packages"
	}
	if from := controllerOf(pkgDir); from != "" && module != "" {
		if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
			if to := controllerOf(rest); to != "" && to != from {
				return fmt.Sprintf("controller package %s may not import controller package %s; move what they share to a package under internal/ that both import", from, to)
			}
		}
	}
	if !strings.HasPrefix(imp, RepoPrefix) {
		return ""
	}
	target := moduleOf(imp)
	if target == module || target == "" {
		return ""
	}
	allowed, known := allowedModules[module]
	if !known {
		return "" // hack/ and other dev-only modules are not released and may use anything
	}
	if !slices.Contains(allowed, target) {
		return fmt.Sprintf("module %s may not depend on %s (dependencies point down: cluster-api -> machine-api -> {nodelink, drain})", module, target)
	}
	return ""
}

// controllerOf returns <x> when dir (relative to a module root) is internal/controller/<x> or a
// folder below it, and "" otherwise.
func controllerOf(dir string) string {
	rest, ok := strings.CutPrefix(dir, "internal/controller/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func isAPIDir(pkgDir string) bool {
	return pkgDir == "api" || strings.HasPrefix(pkgDir, "api/")
}

func apiImportAllowed(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return true // standard library
	}
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/"} {
		if strings.HasPrefix(imp, prefix) {
			return true
		}
	}
	if strings.HasPrefix(imp, RepoPrefix) {
		_, rest, _ := strings.Cut(strings.TrimPrefix(imp, RepoPrefix), "/")
		return rest == "api" || strings.HasPrefix(rest, "api/")
	}
	return false
}

// moduleOf returns the released module an import path of this repository belongs to.
func moduleOf(imp string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(imp, RepoPrefix), "/")
	m := RepoPrefix + first
	if _, ok := allowedModules[m]; ok {
		return m
	}
	return ""
}

// owningModule finds the go.mod nearest to rel and returns the module path it declares. Example
// modules under machine-api/examples/ are attributed to machine-api with pkgDir starting with
// "examples/", so the provider rule applies to them.
func owningModule(root, rel string) (module, pkgDir string, err error) {
	dir := filepath.Dir(rel)
	for {
		if dir == "." {
			return "", "", nil
		}
		data, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err == nil {
			mod := modulePath(data)
			pkg := strings.TrimPrefix(strings.TrimPrefix(filepath.ToSlash(filepath.Dir(rel)), filepath.ToSlash(dir)), "/")
			if strings.HasPrefix(filepath.ToSlash(dir), "machine-api/examples/") {
				return "machineapi.dev/machine-api", "examples/" + pkg, nil
			}
			return mod, pkg, nil
		}
		if !os.IsNotExist(err) {
			return "", "", err
		}
		dir = filepath.Dir(dir)
	}
}

func modulePath(gomod []byte) string {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
