package check

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/test/testrepo"
	"machineapi.dev/release/internal/versions"
)

// offline keeps every go command of a test away from the network: the test modules need nothing
// beyond the repository, which the consumer test serves from its local proxy.
func offline(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-buildvcs=false")
}

func options(t *testing.T, r *testrepo.Repo, module, version string) Options {
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
	return Options{Repo: repo, Manifest: m, Module: module, Version: version, Log: &testLog{t: t}}
}

// testLog sends the checks' progress to the test log, shown when a test fails or with -v.
type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// wantRefusal runs the checks and expects the named step to refuse with a message containing want.
func wantRefusal(t *testing.T, o Options, step, want string) {
	t.Helper()
	err := Run(context.Background(), o)
	var e *Error
	if !errors.As(err, &e) || e.Step != step || !strings.Contains(e.Error(), want) {
		t.Fatalf("Run error = %v, want step %q refusing with %q", err, step, want)
	}
}

func TestGoodReleaseIsTaggedAndResolvesWithoutWorkspaceOrReplaces(t *testing.T) {
	offline(t)
	r := testrepo.TwoModules(t, "v0.1.0")
	ctx := context.Background()

	// base first: the release order puts a required module before the modules requiring it.
	tag, err := Tag(ctx, options(t, r, "base", "v0.1.0"), "base v0.1.0\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Git("cat-file", "-t", "refs/tags/"+tag); got != "tag" {
		t.Errorf("%s is a %s, want an annotated tag", tag, got)
	}

	o := options(t, r, "app", "v0.1.0")
	if err := Run(ctx, o); err != nil {
		t.Fatal(err)
	}
	res, err := Consumer(ctx, ConsumerOptions{Repo: o.Repo, Module: "app", Version: "v0.1.0", Modules: []string{"base", "app"}})
	if err != nil {
		t.Fatal(err)
	}
	// app's released go.mod keeps `replace example.test/base => ../base`, a folder that does not
	// exist beside the consumer's module cache: the build passing with base resolved to its tag
	// shows that a dependency's replace directives are ignored by its consumers.
	if !strings.Contains(string(res.CandidateGoMod), "replace example.test/base => ../base") {
		t.Errorf("served go.mod lost its replace:\n%s", res.CandidateGoMod)
	}
	if res.Resolved["example.test/base"] != "v0.1.0" || res.Resolved["example.test/app"] != "v0.1.0" {
		t.Errorf("consumer resolved %v, want base and app at v0.1.0", res.Resolved)
	}
	if r.Git("tag", "--list", "app/*") != "" {
		t.Errorf("check created a tag; only tag may")
	}
}

func TestCheckRefuses(t *testing.T) {
	tests := map[string]struct {
		setup          func(t *testing.T) *testrepo.Repo
		module, step   string
		version, wants string
	}{
		"a dirty work tree": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.1.0")
				r.Write(map[string]string{"base/scratch.go": "package base\n"})
				return r
			},
			module: "base", version: "v0.1.0", step: StepClean, wants: "base/scratch.go",
		},
		"an untagged sibling require": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.2.0")
				r.Tag("base/v0.1.0")
				return r
			},
			module: "app", version: "v0.1.0", step: StepSiblings, wants: "no tag base/v0.2.0",
		},
		"a sibling require whose tag is older than the source the repository builds with": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.1.0")
				r.Tag("base/v0.1.0")
				r.Write(map[string]string{"base/bye.go": "package base\n\n// Bye says goodbye.\nfunc Bye() {}\n"})
				r.Commit("base: Bye")
				return r
			},
			module: "app", version: "v0.1.0", step: StepSiblings, wants: "base/bye.go",
		},
		"a version versions.yaml does not declare": {
			setup:  func(t *testing.T) *testrepo.Repo { return testrepo.TwoModules(t, "v0.1.0") },
			module: "base", version: "v0.2.0", step: StepVersion, wants: "declares base v0.1.0",
		},
		"a version that is already tagged": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.1.0")
				r.Tag("base/v0.1.0")
				return r
			},
			module: "base", version: "v0.1.0", step: StepVersion, wants: "already exists",
		},
		"a replace consumers would not see": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.1.0")
				r.Tag("base/v0.1.0")
				r.Write(map[string]string{"app/go.mod": "module example.test/app\n\ngo 1.26.0\n\nrequire example.test/base v0.1.0\n\nreplace example.test/base => ../../elsewhere/base\n"})
				r.Commit("app: build base from elsewhere")
				return r
			},
			module: "app", version: "v0.1.0", step: StepSiblings, wants: "consumers ignore it",
		},
		"a failing test": {
			setup: func(t *testing.T) *testrepo.Repo {
				r := testrepo.TwoModules(t, "v0.1.0")
				r.Write(map[string]string{"base/base.go": "package base\n\n// Hello greets.\nfunc Hello() string { return \"hi\" }\n"})
				r.Commit("base: hi")
				return r
			},
			module: "base", version: "v0.1.0", step: StepTest, wants: "Hello changed",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			offline(t)
			wantRefusal(t, options(t, tc.setup(t), tc.module, tc.version), tc.step, tc.wants)
		})
	}
}

func TestCheckRefusesAModuleThatOnlyBuildsThroughTheWorkspace(t *testing.T) {
	offline(t)
	r := testrepo.TwoModules(t, "v0.1.0")
	r.Tag("base/v0.1.0")
	// app imports base but its go.mod neither requires nor replaces it: only go.work makes it build.
	r.Write(map[string]string{"app/go.mod": "module example.test/app\n\ngo 1.26.0\n"})
	r.Commit("app: rely on the workspace")

	build := exec.Command("go", "build", "./...")
	build.Dir = r.Dir + "/app"
	build.Env = append(os.Environ(), "GOWORK="+r.Dir+"/go.work")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("with go.work app should build, but: %v\n%s", err, out)
	}
	wantRefusal(t, options(t, r, "app", "v0.1.0"), StepTidy, "example.test/base")
}

// A module that builds in the repository only thanks to its committed replace (it uses an API that
// its required sibling version lacks) fails the consumer test: consumers ignore that replace.
func TestConsumerFailsWhenOnlyTheReplaceMakesItBuild(t *testing.T) {
	offline(t)
	r := testrepo.TwoModules(t, "v0.1.0")
	r.Tag("base/v0.1.0")
	r.Write(map[string]string{
		"base/bye.go":     "package base\n\n// Bye says goodbye.\nfunc Bye() string { return \"bye\" }\n",
		"app/farewell.go": "package app\n\nimport \"example.test/base\"\n\n// Farewell is base's goodbye.\nfunc Farewell() string { return base.Bye() }\n",
	})
	r.Commit("base: Bye; app: use it")

	o := options(t, r, "app", "v0.1.0")
	var log bytes.Buffer
	_, err := Consumer(context.Background(), ConsumerOptions{Repo: o.Repo, Module: "app", Version: "v0.1.0", Modules: []string{"base", "app"}, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "undefined: base.Bye") {
		t.Fatalf("Consumer error = %v, want the build to miss base.Bye\n%s", err, log.String())
	}
	// In the repository, the replace makes the same module build.
	build := exec.Command("go", "build", "./...")
	build.Dir = r.Dir + "/app"
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("app should build in the repository through its replace, but: %v\n%s", err, out)
	}
}
