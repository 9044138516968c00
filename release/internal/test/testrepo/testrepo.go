// Package testrepo builds throwaway git repositories laid out like this one (sibling Go modules,
// relative replaces, release/versions.yaml, <module>/vX.Y.Z tags) for the release tool's tests.
package testrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a git repository in a test's temporary directory.
type Repo struct {
	t   testing.TB
	Dir string
}

// New creates an empty repository with a committer identity of its own.
func New(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	r.Git("init", "--quiet", "--initial-branch=main")
	r.Git("config", "user.name", "Release Test")
	r.Git("config", "user.email", "release-test@example.test")
	r.Git("config", "commit.gpgsign", "false")
	r.Git("config", "tag.gpgsign", "false")
	return r
}

// Git runs git in the repository and returns its trimmed output; a failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	// Fixed dates keep commit hashes, and so everything derived from them, stable across runs.
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes files (repository-relative path → content), creating folders.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	for path, content := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// Remove deletes a repository-relative path.
func (r *Repo) Remove(path string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.Dir, filepath.FromSlash(path))); err != nil {
		r.t.Fatal(err)
	}
}

// Commit stages everything and commits it, returning the new commit's hash.
func (r *Repo) Commit(message string) string {
	r.t.Helper()
	r.Git("add", "--all")
	r.Git("commit", "--quiet", "--allow-empty", "-m", message)
	return r.Git("rev-parse", "HEAD")
}

// Tag creates an annotated tag on HEAD.
func (r *Repo) Tag(name string) {
	r.t.Helper()
	r.Git("tag", "--annotate", "-m", name, name)
}

// TwoModules lays out the smallest repository the release tool is meant for and commits it:
// module base (example.test/base, a function Hello) and module app (example.test/app, requiring
// base at baseVersion through a relative replace, exactly like machine-api requires drain), with
// a versions.yaml listing both at v0.1.0, beta.
func TwoModules(t testing.TB, baseVersion string) *Repo {
	r := New(t)
	r.Write(map[string]string{
		"release/versions.yaml": `source: https://example.test/repo
imageRepository: example.test/images
modules:
  - name: base
    version: v0.1.0
    stability: beta
  - name: app
    version: v0.1.0
    stability: beta
`,
		"go.work":      "go 1.26.0\n\nuse (\n\t./app\n\t./base\n)\n",
		"base/go.mod":  "module example.test/base\n\ngo 1.26.0\n",
		"base/base.go": "// Package base says hello.\npackage base\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n",
		"base/base_test.go": `package base

import "testing"

func TestHello(t *testing.T) {
	if Hello() != "hello" {
		t.Fatal("Hello changed")
	}
}
`,
		"app/go.mod": "module example.test/app\n\ngo 1.26.0\n\nrequire example.test/base " + baseVersion +
			"\n\nreplace example.test/base => ../base\n",
		"app/app.go": "// Package app greets the world through base.\npackage app\n\nimport \"example.test/base\"\n\n" +
			"// Greeting is base's greeting for the world.\nfunc Greeting() string { return base.Hello() + \", world\" }\n",
		// A package of tests only, like machine-api/examples: nothing to import, still released.
		"app/examples/examples_test.go": "package examples\n\nimport (\n\t\"fmt\"\n\n\t\"example.test/app\"\n)\n\nfunc ExampleGreeting() {\n\tfmt.Println(app.Greeting())\n\t// Output: hello, world\n}\n",
		"app/cmd/app/main.go":           "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.test/app\"\n)\n\nfunc main() { fmt.Println(app.Greeting()) }\n",
	})
	r.Commit("base and app")
	return r
}
