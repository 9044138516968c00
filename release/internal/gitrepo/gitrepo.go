package gitrepo

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// Repo is a git work tree.
type Repo struct {
	// Dir is the root of the work tree.
	Dir string
}

// Open returns the repository whose work tree contains dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	r := &Repo{Dir: dir}
	top, err := r.git(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git work tree: %w", dir, err)
	}
	return &Repo{Dir: strings.TrimSpace(top)}, nil
}

func (r *Repo) git(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.Dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Tags returns module's release versions (from tags <module>/vX.Y.Z), highest first.
func (r *Repo) Tags(ctx context.Context, module string) ([]string, error) {
	out, err := r.git(ctx, "tag", "--list", module+"/v*")
	if err != nil {
		return nil, err
	}
	var versions []string
	for _, tag := range strings.Fields(out) {
		v := strings.TrimPrefix(tag, module+"/")
		if semver.IsValid(v) && !strings.Contains(v, "/") {
			versions = append(versions, v)
		}
	}
	semver.Sort(versions)
	for i, j := 0, len(versions)-1; i < j; i, j = i+1, j-1 {
		versions[i], versions[j] = versions[j], versions[i]
	}
	return versions, nil
}

// LatestTag returns module's highest released version, or "" when it has none.
func (r *Repo) LatestTag(ctx context.Context, module string) (string, error) {
	tags, err := r.Tags(ctx, module)
	if err != nil || len(tags) == 0 {
		return "", err
	}
	return tags[0], nil
}

// TagName is the tag of a module version.
func TagName(module, version string) string { return module + "/" + version }

// TagExists reports whether the tag exists.
func (r *Repo) TagExists(ctx context.Context, tag string) bool {
	_, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "refs/tags/"+tag)
	return err == nil
}

// Commit is one commit that touched a module.
type Commit struct {
	Hash    string
	Subject string
	Author  string
	Time    time.Time
}

// Log returns the commits reachable from to and not from from (all of them when from is empty)
// that touched path, newest first.
func (r *Repo) Log(ctx context.Context, from, to, path string) ([]Commit, error) {
	rng := to
	if from != "" {
		rng = from + ".." + to
	}
	out, err := r.git(ctx, "log", "--format=%H%x00%s%x00%an%x00%ct", rng, "--", path)
	if err != nil {
		return nil, err
	}
	var commits []Commit
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\x00")
		if len(f) != 4 {
			continue
		}
		secs, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("git log: commit %s has a commit time that is not a number: %w", f[0], err)
		}
		commits = append(commits, Commit{Hash: f[0], Subject: f[1], Author: f[2], Time: time.Unix(secs, 0).UTC()})
	}
	return commits, nil
}

// Dirty lists the paths (under pathspecs, or anywhere) that differ from HEAD, untracked files
// included, in `git status --porcelain` form; empty means clean.
func (r *Repo) Dirty(ctx context.Context, pathspecs ...string) ([]string, error) {
	args := append([]string{"status", "--porcelain", "--untracked-files=all", "--"}, pathspecs...)
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	var dirty []string
	for line := range strings.Lines(out) {
		if l := strings.TrimRight(line, "\n"); l != "" {
			dirty = append(dirty, l)
		}
	}
	return dirty, nil
}

// Rev resolves a revision to a full commit hash.
func (r *Repo) Rev(ctx context.Context, rev string) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--verify", rev+"^{commit}")
	return strings.TrimSpace(out), err
}

// CommitTime returns the committer time of a revision.
func (r *Repo) CommitTime(ctx context.Context, rev string) (time.Time, error) {
	out, err := r.git(ctx, "log", "-1", "--format=%ct", rev)
	if err != nil {
		return time.Time{}, err
	}
	var secs int64
	if _, err := fmt.Sscan(strings.TrimSpace(out), &secs); err != nil {
		return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// Show returns a file's content at a revision; os.ErrNotExist when it does not exist there.
func (r *Repo) Show(ctx context.Context, rev, path string) ([]byte, error) {
	if _, err := r.git(ctx, "cat-file", "-e", rev+":"+path); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", path, rev, os.ErrNotExist)
	}
	out, err := r.git(ctx, "show", rev+":"+path)
	return []byte(out), err
}

// Changed lists the files under path that differ between two revisions.
func (r *Repo) Changed(ctx context.Context, from, to, path string) ([]string, error) {
	out, err := r.git(ctx, "diff", "--name-only", from, to, "--", path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Export writes the tree of a revision into dir (which it creates) with git archive, so nothing in
// the repository (work tree, index, worktree list) changes.
func (r *Repo) Export(ctx context.Context, rev, dir string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", rev)
	cmd.Dir = r.Dir
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	extractErr := untar(out, dir)
	if extractErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	return extractErr
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
			continue // pax_global_header and anything that would escape dir
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode)&0o777|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return err
			}
		}
	}
}

// CreateTag creates an annotated tag on a revision. It never pushes.
func (r *Repo) CreateTag(ctx context.Context, tag, rev, message string) error {
	f, err := os.CreateTemp("", "release-tag-message-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(message); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = r.git(ctx, "tag", "--annotate", "--file", f.Name(), "--cleanup=verbatim", tag, rev)
	return err
}

// Files lists the files under path at a revision.
func (r *Repo) Files(ctx context.Context, rev, path string) ([]string, error) {
	out, err := r.git(ctx, "ls-tree", "-r", "--name-only", rev, "--", path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}
