package lint_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestLintConfigCoversEveryController checks that each controller package of the repository
// (<module>/internal/controller/<x>/) has the depguard rule keeping other controller packages
// out of it, and that no rule is left for a controller that is gone. importcheck enforces the
// same rule for make verify without a list; depguard needs one rule per package.
func TestLintConfigCoversEveryController(t *testing.T) {
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Linters struct {
			Settings struct {
				Depguard struct {
					Rules map[string]struct {
						Files []string `yaml:"files"`
						Allow []string `yaml:"allow"`
						Deny  []struct {
							Pkg string `yaml:"pkg"`
						} `yaml:"deny"`
					} `yaml:"rules"`
				} `yaml:"depguard"`
			} `yaml:"settings"`
		} `yaml:"linters"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("parsing %s: %v", config, err)
	}
	rules := cfg.Linters.Settings.Depguard.Rules

	root := filepath.Join("..", "..")
	dirs, err := filepath.Glob(filepath.Join(root, "*", "internal", "controller", "*"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		if !hasGoFiles(t, dir) {
			continue
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		moduleDir, name := strings.Split(filepath.ToSlash(rel), "/")[0], filepath.Base(dir)
		module := modulePath(t, filepath.Join(root, moduleDir, "go.mod"))
		ruleName := "controller-" + name
		seen[ruleName] = true
		rule, ok := rules[ruleName]
		if !ok {
			t.Errorf("%s has no depguard rule %q in %s", rel, ruleName, config)
			continue
		}
		prefix := module + "/internal/controller/"
		if want := "**/" + moduleDir + "/internal/controller/" + name + "/**"; !slices.Equal(rule.Files, []string{want}) {
			t.Errorf("rule %s: files %v, want [%s]", ruleName, rule.Files, want)
		}
		if len(rule.Deny) != 1 || rule.Deny[0].Pkg != prefix {
			t.Errorf("rule %s: deny %v, want %s", ruleName, rule.Deny, prefix)
		}
		if want := []string{prefix + name + "$", prefix + name + "/"}; !slices.Equal(rule.Allow, want) {
			t.Errorf("rule %s: allow %v, want %v (the package itself and its sub-packages)", ruleName, rule.Allow, want)
		}
	}
	for name := range rules {
		if strings.HasPrefix(name, "controller-") && !seen[name] {
			t.Errorf("depguard rule %s names no controller package that exists", name)
		}
	}
	if len(seen) == 0 {
		t.Fatalf("no controller package found under %s", root)
	}
}

func hasGoFiles(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}

func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%s declares no module", gomod)
	return ""
}
