package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"machineapi.dev/release/internal/test/testrepo"
)

func release(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"--root", dir}, args...), &out); err != nil {
		t.Fatalf("release %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// The commands wired end to end: plan, tag with the changelog as the annotation, changelog.
func TestReleaseFlow(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	r := testrepo.TwoModules(t, "v0.1.0")

	plan := release(t, r.Dir, "plan")
	for _, want := range []string{"Order: base → app", "base (example.test/base, beta): never released; next v0.1.0 (first release)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan does not say %q:\n%s", want, plan)
		}
	}

	out := release(t, r.Dir, "tag", "base", "v0.1.0", "--test-flags=-count=1")
	if !strings.Contains(out, "created tag base/v0.1.0") || !strings.Contains(out, "git push origin base/v0.1.0") {
		t.Errorf("tag output:\n%s", out)
	}
	if msg := r.Git("tag", "--list", "--format=%(contents)", "base/v0.1.0"); !strings.Contains(msg, "## base v0.1.0") || !strings.Contains(msg, "base and app") {
		t.Errorf("tag annotation is not the changelog:\n%s", msg)
	}

	r.Write(map[string]string{"base/bye.go": "package base\n\n// Bye says goodbye.\nfunc Bye() {}\n"})
	r.Commit("base: say goodbye")
	notes := release(t, r.Dir, "changelog", "base")
	for _, want := range []string{"## base v0.1.1", "### API additions", "Bye: added", "- say goodbye ("} {
		if !strings.Contains(notes, want) {
			t.Errorf("changelog does not say %q:\n%s", want, notes)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	r := testrepo.TwoModules(t, "v0.1.0")
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown command":           {[]string{"publish"}, `unknown command "publish"`},
		"check without version":     {[]string{"check", "base"}, "check wants <module> <version>"},
		"build release unversioned": {[]string{"build", "base"}, "needs --version"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"--root", r.Dir}, tc.args...), &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
