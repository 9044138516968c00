package apicompat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"machineapi.dev/release/internal/versions"
)

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.test/lib\n\ngo 1.26.0\n"
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCompareDirs(t *testing.T) {
	const base = "package lib\n\nfunc A() {}\n"
	tests := map[string]struct {
		new        map[string]string
		wantChange versions.Change
		wantLine   string
	}{
		"added function is compatible": {
			new:        map[string]string{"lib.go": base + "func B() {}\n"},
			wantChange: versions.Addition, wantLine: "B: added",
		},
		"removed function is incompatible": {
			new:        map[string]string{"lib.go": "package lib\n"},
			wantChange: versions.Breaking, wantLine: "A: removed",
		},
		"changed signature is incompatible": {
			new:        map[string]string{"lib.go": "package lib\n\nfunc A(int) {}\n"},
			wantChange: versions.Breaking, wantLine: "A: changed from func() to func(int)",
		},
		"unexported and internal changes do not count": {
			new: map[string]string{
				"lib.go":          base + "func b() {}\n",
				"internal/x/x.go": "package x\n\nfunc X() {}\n",
				"cmd/c/main.go":   "package main\n\nfunc Exported() {}\nfunc main() {}\n",
			},
			wantChange: versions.Fix,
		},
	}
	ctx := context.Background()
	oldDir := writeModule(t, map[string]string{"lib.go": base})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := CompareDirs(ctx, oldDir, writeModule(t, tc.new))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Change(); got != tc.wantChange {
				t.Errorf("change = %v, want %v (report %+v)", got, tc.wantChange, r)
			}
			all := strings.Join(append(r.Incompatible, r.Compatible...), "\n")
			if tc.wantLine != "" && !strings.Contains(all, tc.wantLine) {
				t.Errorf("report %q does not mention %q", all, tc.wantLine)
			}
		})
	}
}

func TestLoadRefusesCodeThatDoesNotTypeCheck(t *testing.T) {
	dir := writeModule(t, map[string]string{"lib.go": "package lib\n\nfunc A() { undefined() }\n"})
	if _, err := Load(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("Load error = %v, want a type-checking error", err)
	}
}
