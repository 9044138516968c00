// Command release plans, checks, tags and builds the releases of this repository's modules, each
// on its own cadence (tags <module>/vX.Y.Z). docs/releasing.md walks through a release; `release
// help` lists the subcommands. It never pushes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"machineapi.dev/release/internal/binaries"
	"machineapi.dev/release/internal/changelog"
	"machineapi.dev/release/internal/check"
	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/image"
	"machineapi.dev/release/internal/plan"
	"machineapi.dev/release/internal/versions"
)

const usage = `usage: release [--root DIR] <command> [flags] [args]

commands:
  plan [--json] [--skip-api]          per module: last tag, commits since, API changes, next version;
                                      the release order and the require bumps it implies
  check <module> <version>            refuse or accept a release (clean tree, tagged sibling requires,
        [--test-flags FLAGS]          GOWORK=off tidy/vet/test, consumer build through a local GOPROXY)
  tag <module> <version>              check, then create the annotated tag <module>/<version> on HEAD
        [--test-flags FLAGS]          with the changelog as its message (never pushes)
  changelog <module> [--version V]    the module's release notes since its last tag
  build <module> [--version V]        GoReleaser binaries, the OCI image and the changelog in
        [--snapshot] [--goreleaser P] dist/<module>/ (a release needs the tag on HEAD)
  image <module> --version V          rebuild the OCI image from dist/<module>/artifacts.json
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// env is what every command needs: the repository and its versions.yaml.
type env struct {
	repo     *gitrepo.Repo
	manifest *versions.Manifest
	out      io.Writer
}

func run(ctx context.Context, args []string, out io.Writer) error {
	global := flag.NewFlagSet("release", flag.ContinueOnError)
	global.Usage = func() { fmt.Fprint(global.Output(), usage) }
	root := global.String("root", ".", "a folder inside the repository")
	if err := global.Parse(args); err != nil {
		return err
	}
	if global.NArg() == 0 || global.Arg(0) == "help" {
		global.Usage()
		return nil
	}
	repo, err := gitrepo.Open(ctx, *root)
	if err != nil {
		return err
	}
	manifest, err := versions.Load(filepath.Join(repo.Dir, versions.File))
	if err != nil {
		return err
	}
	e := &env{repo: repo, manifest: manifest, out: out}
	cmd, rest := global.Arg(0), global.Args()[1:]
	commands := map[string]func(context.Context, []string) error{
		"plan": e.plan, "check": e.check, "tag": e.tag, "changelog": e.changelog, "build": e.build, "image": e.image,
	}
	f, ok := commands[cmd]
	if !ok {
		global.Usage()
		return fmt.Errorf("unknown command %q", cmd)
	}
	return f(ctx, rest)
}

// parse parses a command's flags and wants exactly the named positional arguments.
func parse(fs *flag.FlagSet, args []string, names ...string) ([]string, error) {
	// Positional arguments may come before the flags: release check machine-api v0.4.0 --test-flags=-short.
	var positional []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != len(names) {
		return nil, fmt.Errorf("%s wants %s, got %q", fs.Name(), strings.Join(names, " "), positional)
	}
	return positional, nil
}

func (e *env) plan(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	skipAPI := fs.Bool("skip-api", false, "do not compare exported APIs (faster; every change counts as a fix)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	p, err := plan.Make(ctx, plan.Options{Repo: e.repo, Manifest: e.manifest, SkipAPI: *skipAPI})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return p.Write(e.out)
}

func (e *env) checkOptions(fs *flag.FlagSet, args []string) (check.Options, error) {
	testFlags := fs.String("test-flags", "", "flags for go test, space-separated (for example -short)")
	pos, err := parse(fs, args, "<module>", "<version>")
	if err != nil {
		return check.Options{}, err
	}
	return check.Options{
		Repo: e.repo, Manifest: e.manifest, Module: pos[0], Version: pos[1],
		TestFlags: strings.Fields(*testFlags), Log: e.out,
	}, nil
}

func (e *env) check(ctx context.Context, args []string) error {
	o, err := e.checkOptions(flag.NewFlagSet("check", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	return check.Run(ctx, o)
}

func (e *env) tag(ctx context.Context, args []string) error {
	o, err := e.checkOptions(flag.NewFlagSet("tag", flag.ContinueOnError), args)
	if err != nil {
		return err
	}
	notes, err := e.notes(ctx, o.Module, o.Version)
	if err != nil {
		return err
	}
	tag, err := check.Tag(ctx, o, notes)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "created tag %s on HEAD; nothing was pushed. Publish it with:\n  git push origin %s\n", tag, tag)
	return nil
}

// notes renders the module's changelog for version.
func (e *env) notes(ctx context.Context, module, version string) (string, error) {
	if _, ok := e.manifest.Module(module); !ok {
		return "", fmt.Errorf("%s lists no module %q", versions.File, module)
	}
	p, err := plan.Make(ctx, plan.Options{Repo: e.repo, Manifest: e.manifest, APIOf: []string{module}})
	if err != nil {
		return "", err
	}
	for _, m := range p.Modules {
		if m.Name == module {
			if version == "" {
				version = m.Released()
			}
			when, err := binaries.Epoch(ctx, e.repo)
			if err != nil {
				return "", err
			}
			return changelog.Render(m, version, when), nil
		}
	}
	return "", fmt.Errorf("the plan has no module %s", module)
}

func (e *env) changelog(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("changelog", flag.ContinueOnError)
	version := fs.String("version", "", "the version to title the notes with (default: the plan's next version)")
	pos, err := parse(fs, args, "<module>")
	if err != nil {
		return err
	}
	notes, err := e.notes(ctx, pos[0], *version)
	if err != nil {
		return err
	}
	_, err = io.WriteString(e.out, notes)
	return err
}

func (e *env) build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	version := fs.String("version", "", "the module version (default for a snapshot: the one versions.yaml declares)")
	snapshot := fs.Bool("snapshot", false, "build a snapshot: version <version>-snapshot.<commit>, no tag needed")
	goreleaser := fs.String("goreleaser", "goreleaser", "the goreleaser executable")
	pos, err := parse(fs, args, "<module>")
	if err != nil {
		return err
	}
	mod, ok := e.manifest.Module(pos[0])
	if !ok {
		return fmt.Errorf("%s lists no module %q", versions.File, pos[0])
	}
	if *version == "" {
		if !*snapshot {
			return errors.New("build of a release needs --version (the tagged version); use --snapshot otherwise")
		}
		*version = mod.Version
	}
	b, err := binaries.Run(ctx, binaries.Options{
		Repo: e.repo, Manifest: e.manifest, Module: mod, Version: *version, Snapshot: *snapshot, Goreleaser: *goreleaser, Log: e.out,
	})
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(b.Binaries)) {
		for _, bin := range b.Binaries[name] {
			fmt.Fprintf(e.out, "binary %s %s/%s: %s\n", name, bin.OS, bin.Arch, rel(e.repo.Dir, bin.Path))
		}
	}
	notes, err := e.notes(ctx, mod.Name, *version)
	if err != nil {
		return err
	}
	notesFile := filepath.Join(b.Dist, "CHANGELOG.md")
	if err := os.WriteFile(notesFile, []byte(notes), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.out, "changelog: %s\n", rel(e.repo.Dir, notesFile))
	if mod.Image == "" {
		return nil
	}
	return e.writeImage(ctx, mod, b.Version, b.Binaries[mod.Image], b.Dist)
}

func (e *env) image(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	version := fs.String("version", "", "the version the binaries were stamped with (the image tag)")
	pos, err := parse(fs, args, "<module>")
	if err != nil {
		return err
	}
	mod, ok := e.manifest.Module(pos[0])
	if !ok || mod.Image == "" {
		return fmt.Errorf("%s lists no module %q with an image", versions.File, pos[0])
	}
	if *version == "" {
		return errors.New("image needs --version")
	}
	dist := filepath.Join(e.repo.Dir, "dist", mod.Name)
	bins, err := binaries.ReadArtifacts(e.repo.Dir, dist)
	if err != nil {
		return fmt.Errorf("reading the binaries of %s (run release build first): %w", mod.Name, err)
	}
	return e.writeImage(ctx, mod, *version, bins[mod.Image], dist)
}

func (e *env) writeImage(ctx context.Context, mod versions.Module, version string, bins []image.Binary, dist string) error {
	head, err := e.repo.Rev(ctx, "HEAD")
	if err != nil {
		return err
	}
	created, err := binaries.Epoch(ctx, e.repo)
	if err != nil {
		return err
	}
	idx, err := image.Build(image.Options{
		Title: mod.Name, Binary: mod.Image, Binaries: bins,
		Version: version, Source: e.manifest.Source, Revision: head, Created: created,
	})
	if err != nil {
		return err
	}
	repository := e.manifest.ImageRepository + "/" + mod.Name
	w, err := image.Write(idx, filepath.Join(dist, "image"), repository, version)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.out, "image %s:%s (created %s)\n  index %s\n  OCI layout %s\n", repository, version, created.Format("2006-01-02T15:04:05Z"), w.Index, rel(e.repo.Dir, w.Layout))
	for _, platform := range slices.Sorted(maps.Keys(w.Tarballs)) {
		file := w.Tarballs[platform]
		st, err := os.Stat(file)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.out, "  %s manifest %s, docker-load tarball %s (%d bytes)\n", platform, w.Manifests[platform], rel(e.repo.Dir, file), st.Size())
	}
	return nil
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
