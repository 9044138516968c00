package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"machineapi.dev/release/internal/apicompat"
	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/versions"
)

// Plan is the release plan of a repository.
type Plan struct {
	// Head is the commit the plan was made at.
	Head string `json:"head"`
	// Dirty is true when the work tree differs from Head (the API is read from the work tree).
	Dirty bool `json:"dirty,omitempty"`
	// Modules are in release order.
	Modules []*Module `json:"modules"`
	// Waves groups module names that can be released together; each wave requires only earlier ones.
	Waves [][]string `json:"waves"`
}

// Module is one module's part of the plan.
type Module struct {
	Name      string             `json:"name"`
	Path      string             `json:"path"`
	Stability versions.Stability `json:"stability"`
	// Declared is the version versions.yaml holds.
	Declared string `json:"declared"`
	// LastTag is the highest released version; empty before the first release.
	LastTag string `json:"lastTag,omitempty"`
	// Commits touched the module since LastTag (all of them before the first release).
	Commits []gitrepo.Commit `json:"commits,omitempty"`
	// API compares the work tree with LastTag; nil before the first release.
	API *apicompat.Report `json:"api,omitempty"`
	// Change is what the release carries.
	Change versions.Change `json:"change"`
	// Next is the version to release; empty when there is nothing to release.
	Next string `json:"next,omitempty"`
	// Requires are the module's requires of sibling modules and what the plan sets them to.
	Requires []Require `json:"requires,omitempty"`
	// Notes explain the suggestion and what the release manager must do by hand.
	Notes []string `json:"notes,omitempty"`
}

// Require is a module's require of a sibling module.
type Require struct {
	Module string `json:"module"`
	Path   string `json:"path"`
	// Previous is the version the last release required; empty before the first release.
	Previous string `json:"previous,omitempty"`
	Current  string `json:"current"`
	// Planned is the version the release must require: the sibling's next (or last) release.
	Planned string `json:"planned"`
}

// Bumped reports whether the release changes the require.
func (r Require) Bumped() bool { return r.Current != r.Planned }

// Options say what to plan.
type Options struct {
	// Repo is the repository; Manifest its versions.yaml.
	Repo     *gitrepo.Repo
	Manifest *versions.Manifest
	// SkipAPI skips the API comparison (and so treats every changed module as a fix).
	SkipAPI bool
	// APIOf, when set, limits the API comparison to these modules.
	APIOf []string
}

// Make computes the plan.
func Make(ctx context.Context, o Options) (*Plan, error) {
	head, err := o.Repo.Rev(ctx, "HEAD")
	if err != nil {
		return nil, err
	}
	dirty, err := o.Repo.Dirty(ctx)
	if err != nil {
		return nil, err
	}
	graph, err := ReadGraph(o.Repo.Dir, o.Manifest)
	if err != nil {
		return nil, err
	}
	waves, err := graph.Waves()
	if err != nil {
		return nil, err
	}
	p := &Plan{Head: head, Dirty: len(dirty) > 0, Waves: waves}
	byName := map[string]*Module{}
	for _, wave := range waves {
		for _, name := range wave {
			mod, _ := o.Manifest.Module(name)
			m := &Module{Name: name, Path: graph.Paths[name], Stability: mod.Stability, Declared: mod.Version}
			if err := m.fill(ctx, o, graph, byName); err != nil {
				return nil, fmt.Errorf("planning %s: %w", name, err)
			}
			byName[name] = m
			p.Modules = append(p.Modules, m)
		}
	}
	return p, nil
}

func (m *Module) fill(ctx context.Context, o Options, g *Graph, planned map[string]*Module) error {
	last, err := o.Repo.LatestTag(ctx, m.Name)
	if err != nil {
		return err
	}
	m.LastTag = last
	from := ""
	if last != "" {
		from = gitrepo.TagName(m.Name, last)
	}
	if m.Commits, err = o.Repo.Log(ctx, from, "HEAD", m.Name+"/"); err != nil {
		return err
	}

	// Uncommitted changes count too: the plan answers "what if I released this work tree".
	dirty, err := o.Repo.Dirty(ctx, m.Name+"/")
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d uncommitted changes in %s/ are part of this plan; commit them before releasing", len(dirty), m.Name))
	}
	m.Change = versions.NoChange
	if len(m.Commits) > 0 || len(dirty) > 0 {
		m.Change = versions.Fix
	}
	compareAPI := !o.SkipAPI && (len(o.APIOf) == 0 || slices.Contains(o.APIOf, m.Name))
	if last != "" && compareAPI && m.Change > versions.NoChange {
		report, err := compareWithTag(ctx, o.Repo, m.Name, from)
		if err != nil {
			return err
		}
		m.API = &report
		m.Change = max(m.Change, report.Change())
	}

	previous := map[string]string{}
	if last != "" {
		if data, err := o.Repo.Show(ctx, from, m.Name+"/go.mod"); err == nil {
			if f, err := modfile.ParseLax("go.mod", data, nil); err == nil {
				for _, r := range f.Require {
					previous[r.Mod.Path] = r.Mod.Version
				}
			}
		}
	}
	// A sibling released in this plan is required at its new version, which is a change too.
	for _, dep := range g.Deps[m.Name] {
		d := planned[dep]
		r := Require{Module: dep, Path: d.Path, Previous: previous[d.Path], Current: g.Requires[m.Name][dep], Planned: d.Released()}
		m.Requires = append(m.Requires, r)
		if r.Bumped() {
			m.Change = max(m.Change, versions.Fix)
			m.Notes = append(m.Notes, fmt.Sprintf("bump require %s %s => %s before releasing", r.Path, r.Current, r.Planned))
		}
	}
	return m.suggest()
}

// suggest sets Next from the change, the last tag and the version versions.yaml declares.
func (m *Module) suggest() error {
	if m.LastTag == "" {
		m.Next = m.Declared
		m.Notes = append(m.Notes, fmt.Sprintf("first release: %s, the version versions.yaml declares", m.Declared))
		return nil
	}
	if m.Change == versions.NoChange {
		return nil
	}
	next, err := versions.Next(m.LastTag, m.Change)
	if err != nil {
		return err
	}
	m.Next = next
	switch c := semver.Compare(m.Declared, m.LastTag); {
	case c > 0 && semver.Compare(m.Declared, next) >= 0:
		m.Notes = append(m.Notes, fmt.Sprintf("versions.yaml already prepares %s", m.Declared))
		m.Next = m.Declared
	case c > 0:
		m.Notes = append(m.Notes, fmt.Sprintf("versions.yaml prepares %s, but the changes since %s need at least %s", m.Declared, m.LastTag, next))
	default:
		m.Notes = append(m.Notes, fmt.Sprintf("set version: %s for %s in %s in the release commit", next, m.Name, versions.File))
	}
	if m.Change == versions.Breaking {
		switch m.Stability {
		case versions.Beta:
			m.Notes = append(m.Notes, "beta module with incompatible changes: the changelog must say how to migrate")
		case versions.Stable:
			m.Notes = append(m.Notes, fmt.Sprintf("a major version needs the module path %s%s and a migration note", strings.TrimSuffix(m.Path, versions.MajorSuffix(m.LastTag)), versions.MajorSuffix(m.Next)))
		}
	}
	return nil
}

// Released is the version consumers get after this plan: Next, or else the last release.
func (m *Module) Released() string {
	if m.Next != "" {
		return m.Next
	}
	if m.LastTag != "" {
		return m.LastTag
	}
	return m.Declared
}

func compareWithTag(ctx context.Context, repo *gitrepo.Repo, module, tag string) (apicompat.Report, error) {
	tmp, err := os.MkdirTemp("", "release-plan-")
	if err != nil {
		return apicompat.Report{}, err
	}
	defer os.RemoveAll(tmp)
	if err := repo.Export(ctx, tag, tmp); err != nil {
		return apicompat.Report{}, err
	}
	return apicompat.CompareDirs(ctx, filepath.Join(tmp, module), filepath.Join(repo.Dir, module))
}

// Graph holds the requires between the repository's modules.
type Graph struct {
	// Paths maps a module name to its module path.
	Paths map[string]string
	// Deps maps a module name to the names of the siblings it requires, sorted.
	Deps map[string][]string
	// Requires maps a module name and a sibling's name to the required version.
	Requires map[string]map[string]string
	names    []string
}

// ReadGraph reads the go.mod of every module in the manifest from the work tree at root.
func ReadGraph(root string, m *versions.Manifest) (*Graph, error) {
	g := &Graph{Paths: map[string]string{}, Deps: map[string][]string{}, Requires: map[string]map[string]string{}, names: m.Names()}
	files := map[string]*modfile.File{}
	for _, name := range g.names {
		f, err := ReadGoMod(filepath.Join(root, name, "go.mod"))
		if err != nil {
			return nil, err
		}
		files[name] = f
		g.Paths[name] = f.Module.Mod.Path
	}
	byPath := map[string]string{}
	for name, path := range g.Paths {
		byPath[path] = name
	}
	for name, f := range files {
		g.Requires[name] = map[string]string{}
		for _, r := range f.Require {
			if dep, ok := byPath[r.Mod.Path]; ok {
				g.Deps[name] = append(g.Deps[name], dep)
				g.Requires[name][dep] = r.Mod.Version
			}
		}
		slices.Sort(g.Deps[name])
	}
	return g, nil
}

// ReadGoMod parses a go.mod file.
func ReadGoMod(path string) (*modfile.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return nil, err
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s names no module", path)
	}
	return f, nil
}

// Waves groups the modules into release waves: the first holds the modules that require no
// sibling, each later one the modules whose siblings are all in earlier waves. Names keep the
// manifest's order within a wave.
func (g *Graph) Waves() ([][]string, error) {
	done := map[string]bool{}
	var waves [][]string
	for len(done) < len(g.names) {
		var wave []string
		for _, name := range g.names {
			if done[name] {
				continue
			}
			ready := true
			for _, dep := range g.Deps[name] {
				ready = ready && done[dep]
			}
			if ready {
				wave = append(wave, name)
			}
		}
		if len(wave) == 0 {
			var left []string
			for _, name := range g.names {
				if !done[name] {
					left = append(left, name)
				}
			}
			return nil, fmt.Errorf("the requires between %s form a cycle", strings.Join(left, ", "))
		}
		for _, name := range wave {
			done[name] = true
		}
		waves = append(waves, wave)
	}
	return waves, nil
}
