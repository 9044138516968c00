package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"machineapi.dev/release/internal/gitrepo"
	"machineapi.dev/release/internal/test/testrepo"
)

func TestTagsAreTheModulesSemverTagsHighestFirst(t *testing.T) {
	r := testrepo.TwoModules(t, "v0.1.0")
	for _, tag := range []string{"base/v0.9.0", "base/v0.10.0", "base/v0.10.0-rc.1", "base/not-a-version", "app/v1.0.0", "v2.0.0"} {
		r.Tag(tag)
	}
	repo, err := gitrepo.Open(context.Background(), r.Dir+"/base")
	if err != nil {
		t.Fatal(err)
	}
	got, err := repo.Tags(context.Background(), "base")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v0.10.0", "v0.10.0-rc.1", "v0.9.0"}; !slices.Equal(got, want) {
		t.Errorf("Tags(base) = %v, want %v", got, want)
	}
}

func TestExportLeavesTheRepositoryAlone(t *testing.T) {
	r := testrepo.TwoModules(t, "v0.1.0")
	ctx := context.Background()
	repo, err := gitrepo.Open(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := repo.Export(ctx, "HEAD", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "app", "go.mod")); err != nil {
		t.Errorf("the export lacks app/go.mod: %v", err)
	}
	if got := strings.Count(r.Git("worktree", "list"), "\n"); got != 0 {
		t.Errorf("Export added a worktree: %s", r.Git("worktree", "list"))
	}
	dirty, err := repo.Dirty(ctx)
	if err != nil || len(dirty) != 0 {
		t.Errorf("Dirty after Export = %v, %v; want clean", dirty, err)
	}
}
