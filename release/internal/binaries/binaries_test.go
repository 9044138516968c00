package binaries

import (
	"context"
	"strings"
	"testing"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/test/testrepo"
)

// A release build runs GoReleaser with --skip=validate, so it must itself refuse what that skips.
func TestReleaseBuildNeedsACleanTreeTaggedAtHead(t *testing.T) {
	tests := map[string]struct {
		setup func(r *testrepo.Repo)
		want  string
	}{
		"tag on HEAD":              {setup: func(r *testrepo.Repo) { r.Tag("app/v0.1.0") }},
		"no tag":                   {setup: func(r *testrepo.Repo) {}, want: "no tag app/v0.1.0"},
		"tag on an earlier commit": {setup: func(r *testrepo.Repo) { r.Tag("app/v0.1.0"); r.Commit("later") }, want: "not HEAD"},
		"dirty tree": {
			setup: func(r *testrepo.Repo) { r.Tag("app/v0.1.0"); r.Write(map[string]string{"app/x.go": "package app\n"}) },
			want:  "differs from HEAD",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := testrepo.TwoModules(t, "v0.1.0")
			tc.setup(r)
			ctx := context.Background()
			repo, err := gitrepo.Open(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			head, err := repo.Rev(ctx, "HEAD")
			if err != nil {
				t.Fatal(err)
			}
			err = releasable(ctx, repo, "app", "v0.1.0", head)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("releasable = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSkipVar(t *testing.T) {
	if got := SkipVar("kubectl-machine"); got != "SKIP_KUBECTL_MACHINE" {
		t.Errorf("SkipVar(kubectl-machine) = %s", got)
	}
}
