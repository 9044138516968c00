package goproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"

	"machineapi.dev/release/internal/gitrepo"
)

// Version is one module version to serve.
type Version struct {
	// Dir is the module's folder in the repository (its name in versions.yaml).
	Dir string
	// Version is the semantic version to serve it as.
	Version string
	// Rev is the revision to cut it from: its tag, or HEAD for a release being checked.
	Rev string
}

// Tagged lists every tagged version (<dir>/vX.Y.Z) of the given module folders.
func Tagged(ctx context.Context, repo *gitrepo.Repo, dirs []string) ([]Version, error) {
	var vs []Version
	for _, dir := range dirs {
		tags, err := repo.Tags(ctx, dir)
		if err != nil {
			return nil, err
		}
		for _, v := range tags {
			vs = append(vs, Version{Dir: dir, Version: v, Rev: gitrepo.TagName(dir, v)})
		}
	}
	return vs, nil
}

// Served is a module version written to the proxy.
type Served struct {
	Path    string
	Version string
	// GoMod is the go.mod the proxy serves for it.
	GoMod []byte
}

// Write adds the versions to the proxy folder root and returns what it served.
func Write(ctx context.Context, repo *gitrepo.Repo, root string, vs []Version) ([]Served, error) {
	lists := map[string][]string{}
	var served []Served
	for _, v := range vs {
		s, err := writeOne(ctx, repo, root, v)
		if err != nil {
			return nil, fmt.Errorf("serving %s %s from %s: %w", v.Dir, v.Version, v.Rev, err)
		}
		lists[s.Path] = append(lists[s.Path], s.Version)
		served = append(served, s)
	}
	for path, versions := range lists {
		semver.Sort(versions)
		dir, err := versionDir(root, path)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "list"), []byte(strings.Join(slices.Compact(versions), "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return served, nil
}

func writeOne(ctx context.Context, repo *gitrepo.Repo, root string, v Version) (Served, error) {
	gomod, err := repo.Show(ctx, v.Rev, v.Dir+"/go.mod")
	if err != nil {
		return Served{}, err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return Served{}, fmt.Errorf("%s/go.mod at %s names no module", v.Dir, v.Rev)
	}
	mv := module.Version{Path: path, Version: v.Version}
	if err := module.Check(path, v.Version); err != nil {
		return Served{}, err
	}
	dir, err := versionDir(root, path)
	if err != nil {
		return Served{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Served{}, err
	}
	var z bytes.Buffer
	if err := zip.CreateFromVCS(&z, mv, repo.Dir, v.Rev, v.Dir+"/"); err != nil {
		return Served{}, err
	}
	when, err := repo.CommitTime(ctx, v.Rev)
	if err != nil {
		return Served{}, err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{v.Version, when})
	if err != nil {
		return Served{}, err
	}
	base := filepath.Join(dir, v.Version)
	for ext, data := range map[string][]byte{".zip": z.Bytes(), ".mod": gomod, ".info": info} {
		if err := os.WriteFile(base+ext, data, 0o644); err != nil {
			return Served{}, err
		}
	}
	return Served{Path: path, Version: v.Version, GoMod: gomod}, nil
}

func versionDir(root, path string) (string, error) {
	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(escaped), "@v"), nil
}

// URL is the GOPROXY entry for a proxy folder.
func URL(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	return "file://" + filepath.ToSlash(abs)
}
