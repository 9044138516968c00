package plan

import (
	"context"
	"slices"
	"strings"
	"testing"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/test/testrepo"
	"machineapi.dev/release/internal/versions"
)

func makePlan(t *testing.T, r *testrepo.Repo) *Plan {
	t.Helper()
	ctx := context.Background()
	repo, err := gitrepo.Open(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := versions.Load(r.Dir + "/" + versions.File)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(ctx, Options{Repo: repo, Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func module(t *testing.T, p *Plan, name string) *Module {
	t.Helper()
	for _, m := range p.Modules {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("plan has no module %s", name)
	return nil
}

// released builds the two-module repository with base exporting Hello and Extra, tagged
// base/v0.1.0 and app/v0.1.0.
func released(t *testing.T) *testrepo.Repo {
	r := testrepo.TwoModules(t, "v0.1.0")
	r.Write(map[string]string{"base/extra.go": "package base\n\n// Extra is extra.\nfunc Extra() {}\n"})
	r.Commit("base: Extra")
	r.Tag("base/v0.1.0")
	r.Tag("app/v0.1.0")
	return r
}

func TestPlanSuggestsTheBumpTheAPIChangeNeeds(t *testing.T) {
	tests := map[string]struct {
		change         func(r *testrepo.Repo)
		wantBase       string
		wantChange     versions.Change
		wantAPIMessage string
	}{
		"added exported function is a patch on v0": {
			change: func(r *testrepo.Repo) {
				r.Write(map[string]string{"base/bye.go": "package base\n\n// Bye says goodbye.\nfunc Bye() string { return \"bye\" }\n"})
			},
			wantBase: "v0.1.1", wantChange: versions.Addition, wantAPIMessage: "Bye: added",
		},
		"removed exported function is a minor on v0": {
			change:   func(r *testrepo.Repo) { r.Remove("base/extra.go") },
			wantBase: "v0.2.0", wantChange: versions.Breaking, wantAPIMessage: "Extra: removed",
		},
		"internal change is a patch": {
			change: func(r *testrepo.Repo) {
				r.Write(map[string]string{"base/internal/x/x.go": "package x\n\nfunc X() {}\n"})
			},
			wantBase: "v0.1.1", wantChange: versions.Fix,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := released(t)
			tc.change(r)
			r.Commit("base: " + name)

			p := makePlan(t, r)
			base, app := module(t, p, "base"), module(t, p, "app")
			if base.Next != tc.wantBase || base.Change != tc.wantChange {
				t.Errorf("base: next %s (%v), want %s (%v); API %+v", base.Next, base.Change, tc.wantBase, tc.wantChange, base.API)
			}
			if tc.wantAPIMessage != "" && !slices.ContainsFunc(append(base.API.Incompatible, base.API.Compatible...), func(s string) bool {
				return strings.Contains(s, tc.wantAPIMessage)
			}) {
				t.Errorf("base API report %+v does not mention %q", base.API, tc.wantAPIMessage)
			}
			// app has no commits of its own, but it must require base's new version, so it is
			// released too, as a patch.
			if app.Next != "v0.1.1" || len(app.Requires) != 1 || app.Requires[0].Planned != tc.wantBase {
				t.Errorf("app: next %s, requires %+v; want v0.1.1 requiring base %s", app.Next, app.Requires, tc.wantBase)
			}
			if want := [][]string{{"base"}, {"app"}}; !slices.EqualFunc(p.Waves, want, slices.Equal) {
				t.Errorf("waves = %v, want %v", p.Waves, want)
			}
		})
	}
}

func TestPlanOnV1NeedsAMajorVersionAndANewPath(t *testing.T) {
	r := released(t)
	r.Write(map[string]string{"release/versions.yaml": strings.Replace(r.Git("show", "HEAD:release/versions.yaml"),
		"name: base\n    version: v0.1.0\n    stability: beta", "name: base\n    version: v1.2.0\n    stability: stable", 1) + "\n"})
	r.Commit("base is stable")
	r.Tag("base/v1.2.0")
	r.Remove("base/extra.go")
	r.Commit("base: drop Extra")

	base := module(t, makePlan(t, r), "base")
	if base.Next != "v2.0.0" {
		t.Errorf("base next = %s, want v2.0.0", base.Next)
	}
	if !slices.ContainsFunc(base.Notes, func(n string) bool { return strings.Contains(n, "example.test/base/v2") }) {
		t.Errorf("notes %q do not ask for the /v2 module path", base.Notes)
	}
}

func TestPlanBeforeTheFirstReleaseUsesTheDeclaredVersion(t *testing.T) {
	p := makePlan(t, testrepo.TwoModules(t, "v0.1.0"))
	for _, m := range p.Modules {
		if m.Next != "v0.1.0" || m.API != nil || len(m.Commits) != 1 {
			t.Errorf("%s: next %s, API %v, %d commits; want v0.1.0, no API report, 1 commit", m.Name, m.Next, m.API, len(m.Commits))
		}
	}
}

func TestPlanCountsUncommittedChanges(t *testing.T) {
	r := released(t)
	r.Write(map[string]string{"base/bye.go": "package base\n\n// Bye says goodbye.\nfunc Bye() {}\n"})
	base := module(t, makePlan(t, r), "base")
	if base.Next != "v0.1.1" || base.Change != versions.Addition {
		t.Errorf("base: next %s (%v), want v0.1.1 for the uncommitted addition", base.Next, base.Change)
	}
}

func TestPlanWithNothingChangedReleasesNothing(t *testing.T) {
	p := makePlan(t, released(t))
	for _, m := range p.Modules {
		if m.Next != "" || m.Change != versions.NoChange {
			t.Errorf("%s: next %q (%v), want nothing to release", m.Name, m.Next, m.Change)
		}
	}
}

func TestWavesFollowTheRequires(t *testing.T) {
	g := &Graph{
		names: []string{"drain", "nodelink", "machine-api", "cluster-api", "release"},
		Deps: map[string][]string{
			"machine-api": {"drain", "nodelink"},
			"cluster-api": {"machine-api"},
		},
	}
	waves, err := g.Waves()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"drain", "nodelink", "release"}, {"machine-api"}, {"cluster-api"}}
	if !slices.EqualFunc(waves, want, slices.Equal) {
		t.Errorf("waves = %v, want %v", waves, want)
	}
	g.Deps["drain"] = []string{"cluster-api"}
	if _, err := g.Waves(); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cyclic requires: error = %v, want a cycle error", err)
	}
}
