package binaries

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/image"
	"machineapi.dev/release/internal/versions"
)

// Options name the build.
type Options struct {
	Repo     *gitrepo.Repo
	Manifest *versions.Manifest
	Module   versions.Module
	// Version is the module version; a snapshot appends -snapshot.<short commit>.
	Version  string
	Snapshot bool
	// Goreleaser is the goreleaser executable.
	Goreleaser string
	// Log receives GoReleaser's output; nil discards it.
	Log io.Writer
}

// Build is what a GoReleaser run produced.
type Build struct {
	// Version is the version the binaries were stamped with.
	Version string
	// Dist is dist/<module>.
	Dist string
	// Binaries maps a binary's name to its builds.
	Binaries map[string][]image.Binary
	// Skipped lists the binaries whose main package does not exist yet.
	Skipped []string
}

// Config is the GoReleaser configuration of a module.
func Config(root, module string) string {
	return filepath.Join(root, "release", "goreleaser", module+".yaml")
}

// SkipVar is the variable that makes GoReleaser skip a binary.
func SkipVar(binary string) string {
	return "SKIP_" + strings.ToUpper(strings.ReplaceAll(binary, "-", "_"))
}

// Run runs GoReleaser for the module and returns the binaries it built.
func Run(ctx context.Context, o Options) (*Build, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	root, name := o.Repo.Dir, o.Module.Name
	if len(o.Module.Binaries) == 0 {
		return nil, fmt.Errorf("%s lists no binaries for %s", versions.File, name)
	}
	head, err := o.Repo.Rev(ctx, "HEAD")
	if err != nil {
		return nil, err
	}
	b := &Build{Version: o.Version, Dist: filepath.Join(root, "dist", name)}
	if o.Snapshot {
		b.Version = o.Version + "-snapshot." + head[:12]
	} else if err := releasable(ctx, o.Repo, name, o.Version, head); err != nil {
		return nil, err
	}

	epoch, err := Epoch(ctx, o.Repo)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(),
		"RELEASE_VERSION="+b.Version,
		"GORELEASER_CURRENT_TAG="+o.Version,
		"SOURCE_DATE_EPOCH="+strconv.FormatInt(epoch.Unix(), 10),
	)
	for _, bin := range o.Module.Binaries {
		if !hasMain(filepath.Join(root, name, "cmd", bin)) {
			b.Skipped = append(b.Skipped, bin)
			env = append(env, SkipVar(bin)+"=true")
			fmt.Fprintf(o.Log, "skipping %s: %s/cmd/%s does not exist yet\n", bin, name, bin)
		}
	}
	if len(b.Skipped) == len(o.Module.Binaries) {
		return nil, fmt.Errorf("none of %s's binaries (%s) exists yet", name, strings.Join(o.Module.Binaries, ", "))
	}
	if remotes, err := exec.CommandContext(ctx, "git", "-C", root, "remote").Output(); err == nil && len(strings.TrimSpace(string(remotes))) == 0 && os.Getenv("GIT_CONFIG_COUNT") == "" {
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url", "GIT_CONFIG_VALUE_0="+o.Manifest.Source)
	}

	args := []string{"release", "--clean", "--config", Config(root, name)}
	if o.Snapshot {
		args = append(args, "--snapshot")
	} else {
		args = append(args, "--skip=validate")
	}
	cmd := exec.CommandContext(ctx, o.Goreleaser, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = root, env, o.Log, o.Log
	fmt.Fprintf(o.Log, "== goreleaser %s (version %s)\n", strings.Join(args, " "), b.Version)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("goreleaser %s: %w", strings.Join(args, " "), err)
	}
	if b.Binaries, err = ReadArtifacts(root, b.Dist); err != nil {
		return nil, err
	}
	return b, nil
}

// releasable checks what --skip=validate stops GoReleaser from checking: a clean tree whose HEAD
// the module's tag names.
func releasable(ctx context.Context, repo *gitrepo.Repo, module, version, head string) error {
	dirty, err := repo.Dirty(ctx)
	if err != nil {
		return err
	}
	if len(dirty) > 0 {
		return fmt.Errorf("the work tree differs from HEAD, so the binaries would not be what %s names: %s", gitrepo.TagName(module, version), strings.Join(dirty, ", "))
	}
	tag := gitrepo.TagName(module, version)
	tagged, err := repo.Rev(ctx, "refs/tags/"+tag)
	if err != nil {
		return fmt.Errorf("no tag %s: run release tag %s %s first, or build a --snapshot", tag, module, version)
	}
	if tagged != head {
		return fmt.Errorf("tag %s names %s, not HEAD %s: check out the tag first", tag, tagged[:12], head[:12])
	}
	return nil
}

// Epoch is the time a release's artifacts carry: SOURCE_DATE_EPOCH when set, else HEAD's commit time.
func Epoch(ctx context.Context, repo *gitrepo.Repo) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", s, err)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	return repo.CommitTime(ctx, "HEAD")
}

func hasMain(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".go") })
}

// artifact is the part of an entry of GoReleaser's dist/artifacts.json that matters here.
type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

// ReadArtifacts reads the binaries GoReleaser recorded in dist/artifacts.json (paths relative to
// root, where GoReleaser ran).
func ReadArtifacts(root, dist string) (map[string][]image.Binary, error) {
	data, err := os.ReadFile(filepath.Join(dist, "artifacts.json"))
	if err != nil {
		return nil, err
	}
	var arts []artifact
	if err := json.Unmarshal(data, &arts); err != nil {
		return nil, fmt.Errorf("%s/artifacts.json: %w", dist, err)
	}
	bins := map[string][]image.Binary{}
	for _, a := range arts {
		if a.Type != "Binary" {
			continue
		}
		p := a.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		bins[a.Name] = append(bins[a.Name], image.Binary{OS: a.Goos, Arch: a.Goarch, Path: p})
	}
	return bins, nil
}
