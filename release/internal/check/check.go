package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/plan"
	"machineapi.dev/release/internal/versions"
)

// Options name the release to check.
type Options struct {
	Repo     *gitrepo.Repo
	Manifest *versions.Manifest
	// Module is the module's folder and tag prefix; Version the version to release.
	Module  string
	Version string
	// TestFlags are passed to go test (for example -short, -run, -timeout).
	TestFlags []string
	// Log receives progress and command output; nil discards it.
	Log io.Writer
}

// Error is a failed check.
type Error struct {
	// Step names the check that failed.
	Step string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// The check names, in the order Run runs them.
const (
	StepVersion  = "version"
	StepClean    = "clean work tree"
	StepSiblings = "sibling requires are released"
	StepTidy     = "go mod tidy -diff (GOWORK=off)"
	StepVet      = "go vet (GOWORK=off)"
	StepTest     = "go test (GOWORK=off)"
	StepConsumer = "consumer build through a local GOPROXY"
)

type step struct {
	name string
	run  func(context.Context, *state) error
}

var steps = []step{
	{StepVersion, checkVersion},
	{StepClean, checkClean},
	{StepSiblings, checkSiblings},
	{StepTidy, goStep("mod", "tidy", "-diff")},
	{StepVet, goStep("vet", "./...")},
	{StepTest, goTest},
	{StepConsumer, runConsumer},
}

// state is what the steps learn and share.
type state struct {
	Options
	module  versions.Module
	dir     string
	gomod   *modfile.File
	sibling map[string]string // module path → folder, for every other module of the manifest
}

// Run runs the checks in order and returns the first failure as an *Error.
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	s := &state{Options: o, dir: filepath.Join(o.Repo.Dir, o.Module), sibling: map[string]string{}}
	mod, ok := o.Manifest.Module(o.Module)
	if !ok {
		return &Error{Step: StepVersion, Err: fmt.Errorf("%s lists no module %q (modules: %s)", versions.File, o.Module, strings.Join(o.Manifest.Names(), ", "))}
	}
	s.module = mod
	graph, err := plan.ReadGraph(o.Repo.Dir, o.Manifest)
	if err != nil {
		return &Error{Step: StepVersion, Err: err}
	}
	for name, p := range graph.Paths {
		if name != o.Module {
			s.sibling[p] = name
		}
	}
	if s.gomod, err = plan.ReadGoMod(filepath.Join(s.dir, "go.mod")); err != nil {
		return &Error{Step: StepVersion, Err: err}
	}
	for _, st := range steps {
		fmt.Fprintf(o.Log, "== %s\n", st.name)
		if err := st.run(ctx, s); err != nil {
			fmt.Fprintf(o.Log, "FAIL %s: %v\n", st.name, err)
			return &Error{Step: st.name, Err: err}
		}
	}
	fmt.Fprintf(o.Log, "== %s %s can be released\n", o.Module, o.Version)
	return nil
}

func checkVersion(ctx context.Context, s *state) error {
	if err := versions.CheckStability(s.Version, s.module.Stability); err != nil {
		return err
	}
	modPath := s.gomod.Module.Mod.Path
	if suffix := versions.MajorSuffix(s.Version); !strings.HasSuffix(modPath, suffix) {
		return fmt.Errorf("%s needs the module path to end in %s (it is %s)", s.Version, suffix, modPath)
	}
	if s.module.Version != s.Version {
		return fmt.Errorf("%s declares %s %s: set it to %s in the release commit", versions.File, s.Module, s.module.Version, s.Version)
	}
	tag := gitrepo.TagName(s.Module, s.Version)
	if s.Repo.TagExists(ctx, tag) {
		return fmt.Errorf("tag %s already exists", tag)
	}
	last, err := s.Repo.LatestTag(ctx, s.Module)
	if err != nil {
		return err
	}
	if last != "" && semver.Compare(s.Version, last) <= 0 {
		return fmt.Errorf("%s is not newer than the last release %s", s.Version, last)
	}
	return nil
}

// maxListed bounds the paths an error lists.
const maxListed = 10

func checkClean(ctx context.Context, s *state) error {
	dirty, err := s.Repo.Dirty(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return fmt.Errorf("the work tree differs from HEAD (commit or stash first, the tag names HEAD):\n  %s", strings.Join(firstN(dirty), "\n  "))
	}
	return nil
}

func checkSiblings(ctx context.Context, s *state) error {
	var problems []string
	for _, r := range s.gomod.Replace {
		sib, ok := s.sibling[r.Old.Path]
		if !ok || r.New.Version != "" || path.Clean(r.New.Path) != "../"+sib {
			problems = append(problems, fmt.Sprintf("replace %s => %s %s: consumers ignore it and build with something else; only ../<sibling> replaces of sibling modules are allowed",
				r.Old.Path, r.New.Path, r.New.Version))
		}
	}
	for _, r := range s.gomod.Require {
		sib, ok := s.sibling[r.Mod.Path]
		if !ok {
			continue
		}
		tag := gitrepo.TagName(sib, r.Mod.Version)
		if !s.Repo.TagExists(ctx, tag) {
			problems = append(problems, fmt.Sprintf("requires %s %s, but there is no tag %s: release %s first (release check/tag %s %s)",
				r.Mod.Path, r.Mod.Version, tag, sib, sib, r.Mod.Version))
			continue
		}
		changed, err := s.Repo.Changed(ctx, tag, "HEAD", sib+"/")
		if err != nil {
			return err
		}
		files, err := s.Repo.Files(ctx, "HEAD", sib+"/")
		if err != nil {
			return err
		}
		if src := buildInputs(sib, changed, files); len(src) > 0 {
			problems = append(problems, fmt.Sprintf("requires %s %s, but the in-repo build (replace => ../%s) uses %s's newer source; release %s first and require that version. Changed since %s:\n    %s",
				r.Mod.Path, r.Mod.Version, sib, sib, sib, tag, strings.Join(firstN(src), "\n    ")))
		}
		fmt.Fprintf(s.Log, "   %s %s: tagged %s\n", r.Mod.Path, r.Mod.Version, tag)
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// buildInputs keeps the changed files of module dir that can change what a consumer builds: all
// but tests, testdata, Markdown and the files of nested modules (folders with a go.mod of their
// own, which are not part of the module zip). files lists the module's files, to find those.
func buildInputs(dir string, changed, files []string) []string {
	var nested []string
	for _, f := range files {
		if path.Base(f) == "go.mod" && path.Dir(f) != dir {
			nested = append(nested, path.Dir(f)+"/")
		}
	}
	var out []string
	for _, f := range changed {
		switch {
		case strings.Contains("/"+f+"/", "/testdata/"), strings.HasSuffix(f, "_test.go"), strings.HasSuffix(f, ".md"):
		case slices.ContainsFunc(nested, func(n string) bool { return strings.HasPrefix(f, n) }):
		default:
			out = append(out, f)
		}
	}
	return out
}

func firstN(lines []string) []string {
	if len(lines) <= maxListed {
		return lines
	}
	return append(lines[:maxListed:maxListed], fmt.Sprintf("… and %d more", len(lines)-maxListed))
}

func goStep(args ...string) func(context.Context, *state) error {
	return func(ctx context.Context, s *state) error {
		out, err := goCmd(ctx, s.dir, nil, args...)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, tail(out))
		}
		return nil
	}
}

func goTest(ctx context.Context, s *state) error {
	args := append(append([]string{"test"}, s.TestFlags...), "./...")
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout = io.MultiWriter(&out, s.Log)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(out.String()))
	}
	return nil
}

// goCmd runs the go command in dir with GOWORK=off and the extra environment.
func goCmd(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return string(out), nil
}

// tailLines bounds the command output an error carries.
const tailLines = 40

func tail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > tailLines {
		lines = append([]string{"…"}, lines[len(lines)-tailLines:]...)
	}
	return strings.Join(lines, "\n")
}
