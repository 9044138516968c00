// Package examples holds the test that keeps the example provider honest: it must build and pass
// the conformance suite as its own module, without go.work, importing nothing from this repository
// but machineapi.dev/machine-api.
package examples

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestExampleProviderImportsOnlyMachineAPI builds and tests the example provider module with
// GOWORK=off, and checks that its packages import, from this repository, only machine-api.
func TestExampleProviderImportsOnlyMachineAPI(t *testing.T) {
	goCmd(t, "provider", "build", "./...")
	goCmd(t, "provider", "test", "./...")
	imports := goCmd(t, "provider", "list", "-test", "-f", `{{join .Imports "\n"}}`, "./...")
	seen := false
	for _, imp := range strings.Fields(imports) {
		if !strings.HasPrefix(imp, "machineapi.dev/") {
			continue
		}
		if imp != "machineapi.dev/machine-api" && !strings.HasPrefix(imp, "machineapi.dev/machine-api/") {
			t.Errorf("the example provider imports %s; a provider may import only machineapi.dev/machine-api", imp)
		}
		seen = true
	}
	if !seen {
		t.Fatal("the example provider imports nothing from machineapi.dev/machine-api: the check would pass vacuously")
	}
}
