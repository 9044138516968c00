package testplane_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"machineapi.dev/drain/testplane"
)

// TestMissingBinaries: a test environment without the binaries says which file is missing and the
// command that builds it, before it starts anything.
func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := testplane.Start(context.Background(), testplane.Options{
		BinDir: dir, Dir: t.TempDir(), Kubeconfig: []byte("{}"), Controllers: testplane.DisruptionControllers, Scheduler: true,
	})
	var missing *testplane.MissingBinaryError
	if !errors.As(err, &missing) {
		t.Fatalf("want a MissingBinaryError, got %v", err)
	}
	for _, want := range []string{filepath.Join(dir, "kube-controller-manager"), filepath.Join(dir, "kube-scheduler"), "make controlplane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestNothingAsked: without controllers or scheduler nothing starts and nothing is needed.
func TestNothingAsked(t *testing.T) {
	c, err := testplane.Start(context.Background(), testplane.Options{BinDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.LogFiles()) != 0 {
		t.Errorf("started %v", c.LogFiles())
	}
	c.Stop()
}
