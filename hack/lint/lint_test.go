package lint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// config is the configuration make lint runs with.
var config = filepath.Join("..", "..", ".golangci.yml")

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// linter returns the path of the pinned golangci-lint; `go tool -n` builds it the first time and
// then finds it in the build cache.
func linter(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("go", "tool", "-n", "golangci-lint-kube-api-linter")
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			buildErr = errors.New("go tool -n golangci-lint-kube-api-linter: " + err.Error() + "\n" + stderr.String())
			return
		}
		binary = strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// finding is one issue of golangci-lint's JSON report, its file relative to the linted module.
type finding struct {
	Linter, File, Text string
}

// lint writes files (path -> content) as the module machineapi.dev/machine-api in a temporary
// folder named machine-api (so that the rules written for machine-api's paths apply), runs the
// linter on it with the repository's configuration, and returns its exit code and findings.
func lint(t *testing.T, files map[string]string) (int, []finding) {
	t.Helper()
	bin := linter(t)
	cfg, err := filepath.Abs(config)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "machine-api")
	files["go.mod"] = "module machineapi.dev/machine-api\n\ngo 1.26.0\n"
	for path, content := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(tmp, "report.json")
	cmd := exec.Command(bin, "run", "--config", cfg, "--output.json.path", report, "--output.text.path", "stdout", "./...")
	cmd.Dir = dir
	// The module needs nothing but the standard library: no proxy, no workspace.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	code := 0
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running golangci-lint: %v\n%s", err, out)
	}
	if code != 0 && code != 1 {
		t.Fatalf("golangci-lint failed to run (exit %d), not on findings:\n%s", code, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("reading the report: %v\n%s", err, out)
	}
	var parsed struct {
		Issues []struct {
			FromLinter string
			Text       string
			Pos        struct{ Filename string }
		}
	}
	if err := json.Unmarshal(data, &parsed); err != nil {
		t.Fatalf("parsing the report: %v\n%s", err, data)
	}
	var got []finding
	for _, i := range parsed.Issues {
		// Paths are relative to the configuration's folder: keep what follows the module folder.
		_, rel, _ := strings.Cut(filepath.ToSlash(i.Pos.Filename), "/machine-api/")
		got = append(got, finding{Linter: i.FromLinter, File: rel, Text: i.Text})
	}
	t.Logf("golangci-lint exited %d:\n%s", code, out)
	return code, got
}

// misspelled is the planted misspelling, spelled in two halves so that misspell does not find it
// in this file.
const misspelled = "rec" + "ieves"

// The planted module: one violation per rule, each named in want below.
var planted = map[string]string{
	"api/v1beta1/widget_types.go": `// Package v1beta1 holds planted API types.
package v1beta1

import _ "machineapi.dev/machine-api/internal/widget"

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// size is the number of parts.
	Size int32 ` + "`json:\"size,omitempty\"`" + `
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	// phase summarizes the conditions.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Phase string ` + "`json:\"phase,omitempty\"`" + `
}
`,
	"internal/widget/widget.go": `// Package widget is shared by the planted controllers.
package widget

// Name is shared.
const Name = "widget"
`,
	"internal/controller/machineset/machineset.go": `// Package machineset is a planted controller.
package machineset

// IndexName is what another controller wants.
const IndexName = "spec.providerID"
`,
	"internal/controller/machine/machine.go": `// Package machine is a planted controller.
package machine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"machineapi.dev/machine-api/internal/controller/machineset"
)

// Reconcile ` + misspelled + ` a name.
func Reconcile(name string, err error) error {
	strconv.Atoi(name)
	fmt.Printf("%d\n", name)
	_ = strings.Title(name)
	_ = time.Now()
	_ = machineset.IndexName
	return fmt.Errorf("reconciling %s: %v", name, err)
}

// Check drops the error it checks.
func Check(err error) error {
	if err != nil {
		return nil
	}
	return nil
}

func helper() {}

var _ = 1 //nolint
`,
	"internal/controller/machine/machine_test.go": `package machine

import (
	"testing"
	"time"
)

func TestReconcile(t *testing.T) {
	time.Sleep(time.Millisecond)
}
`,
}

// The same module without the violations: what the rules must let through.
var clean = map[string]string{
	"api/v1beta1/widget_types.go": `// Package v1beta1 holds planted API types.
package v1beta1

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// size is the number of parts.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Size int32 ` + "`json:\"size,omitempty\"`" + `
}
`,
	"internal/widget/widget.go": planted["internal/widget/widget.go"],
	"internal/controller/machine/phase/phase.go": `// Package phase is part of the machine controller.
package phase

// Name is used by the controller.
const Name = "phase"
`,
	"internal/controller/machine/machine.go": `// Package machine is a planted controller.
package machine

import (
	"fmt"
	"os"
	"strconv"

	"machineapi.dev/machine-api/internal/controller/machine/phase"
	"machineapi.dev/machine-api/internal/widget"
)

// Reconcile receives a name.
func Reconcile(name string, err error) error {
	if _, perr := strconv.Atoi(name); perr != nil {
		return fmt.Errorf("parsing %s: %w", name, perr)
	}
	fmt.Fprintln(os.Stderr, name, widget.Name, phase.Name)
	return fmt.Errorf("reconciling %s: %w", name, err)
}
`,
	"internal/controller/machine/machine_test.go": `package machine

import (
	"testing"
	"time"
)

func TestReconcile(t *testing.T) {
	time.Sleep(time.Millisecond) //nolint:forbidigo // planted: a sleep that says why passes
}
`,
}

// TestPlantedViolationsFail is make verify failing on a violation: the linter exits non-zero and
// names each planted one.
func TestPlantedViolationsFail(t *testing.T) {
	want := map[string]finding{
		"api package imports a non-api package":   {"depguard", "api/v1beta1/widget_types.go", "not allowed from list 'api'"},
		"controller imports another controller":   {"depguard", "internal/controller/machine/machine.go", "not allowed from list 'controller-machine'"},
		"API field neither optional nor required": {"kubeapilinter", "api/v1beta1/widget_types.go", "optionalorrequired: field WidgetSpec.Size"},
		"API phase field":                         {"kubeapilinter", "api/v1beta1/widget_types.go", "nophase"},
		"unchecked error":                         {"errcheck", "internal/controller/machine/machine.go", "strconv.Atoi"},
		"error formatted with %v":                 {"errorlint", "internal/controller/machine/machine.go", "non-wrapping format verb"},
		"deprecated function":                     {"staticcheck", "internal/controller/machine/machine.go", "SA1019"},
		"printf verb of the wrong type":           {"govet", "internal/controller/machine/machine.go", "wrong type"},
		"checked error returned as nil":           {"nilerr", "internal/controller/machine/machine.go", "returns nil"},
		"unused function":                         {"unused", "internal/controller/machine/machine.go", "helper is unused"},
		"misspelled word":                         {"misspell", "internal/controller/machine/machine.go", misspelled},
		"bare nolint":                             {"nolintlint", "internal/controller/machine/machine.go", "nolint"},
		"wall clock in a controller":              {"forbidigo", "internal/controller/machine/machine.go", "time.Now"},
		"sleep in a test":                         {"forbidigo", "internal/controller/machine/machine_test.go", "time.Sleep"},
	}
	code, got := lint(t, planted)
	if code != 1 {
		t.Errorf("golangci-lint exited %d on planted violations, want 1", code)
	}
	for name, w := range want {
		found := false
		for _, f := range got {
			if f.Linter == w.Linter && f.File == w.File && strings.Contains(f.Text, w.Text) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s: no %s finding in %s containing %q; got %v", name, w.Linter, w.File, w.Text, got)
		}
	}
}

// TestCleanModulePasses shows that the findings above come from the violations: the same module
// without them, with what the rules allow (a controller importing its own sub-package and a
// shared package, a sleep whose nolint says why, a print whose error is not checked), is clean.
func TestCleanModulePasses(t *testing.T) {
	code, got := lint(t, clean)
	if code != 0 || len(got) != 0 {
		t.Errorf("golangci-lint exited %d with %d findings on the clean module, want 0 and none: %v", code, len(got), got)
	}
}
