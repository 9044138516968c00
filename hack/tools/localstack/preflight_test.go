package localstack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"machineapi.dev/drain/testplane/process"
)

// TestMissingControllerBinaries: make run without kube-controller-manager or kube-scheduler says
// which file is missing and the command that builds it, and starts nothing.
func TestMissingControllerBinaries(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	api, _ := process.FreePort()
	etcd, _ := FreePortPair()
	_, err := Start(context.Background(), Config{BinDir: bin, StateDir: t.TempDir(), APIServerPort: api, EtcdPort: etcd,
		ControllerManager: []string{"*"}, Scheduler: true})
	if err == nil {
		t.Fatal("Start succeeded without kube-controller-manager and kube-scheduler")
	}
	for _, want := range []string{filepath.Join(bin, "kube-controller-manager") + " is missing", filepath.Join(bin, "kube-scheduler") + " is missing", "make controlplane"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "etcd is missing") || strings.Contains(err.Error(), "kube-apiserver is missing") {
		t.Errorf("error %q names binaries that are there", err)
	}
}
