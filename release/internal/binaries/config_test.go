package binaries

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"machineapi.dev/release/internal/versions"
)

// root is the repository root, seen from this package's folder.
const root = "../../.."

type goreleaserConfig struct {
	ProjectName string           `json:"project_name"`
	Dist        string           `json:"dist"`
	Builds      []map[string]any `json:"builds"`
}

func readConfig(t *testing.T, path string) goreleaserConfig {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// The GoReleaser configurations must build exactly the binaries versions.yaml lists, each module's
// into its own dist folder, with version stamping, and the root configuration must build them the
// same way as the module's own.
func TestGoreleaserConfigsMatchVersionsYAML(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, ".goreleaser.yaml")); err != nil {
		t.Skip("not in the repository (no .goreleaser.yaml at its root)")
	}
	m, err := versions.Load(filepath.Join(root, versions.File))
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]map[string]any{}
	for _, b := range readConfig(t, filepath.Join(root, ".goreleaser.yaml")).Builds {
		all[b["id"].(string)] = b
	}
	var listed []string
	for _, mod := range m.Modules {
		if len(mod.Binaries) == 0 {
			continue
		}
		c := readConfig(t, Config(root, mod.Name))
		if c.ProjectName != mod.Name || c.Dist != "dist/"+mod.Name {
			t.Errorf("%s: project_name %q dist %q, want %s and dist/%s", mod.Name, c.ProjectName, c.Dist, mod.Name, mod.Name)
		}
		var ids []string
		for _, b := range c.Builds {
			id := b["id"].(string)
			ids = append(ids, id)
			want := map[string]any{"dir": mod.Name, "main": "./cmd/" + id, "binary": id, "skip": `{{ isEnvSet "` + SkipVar(id) + `" }}`}
			for k, v := range want {
				if b[k] != v {
					t.Errorf("%s build %s: %s = %v, want %v", mod.Name, id, k, b[k], v)
				}
			}
			if ld, _ := b["ldflags"].([]any); len(ld) == 0 || !strings.Contains(ld[0].(string), "-X main.version=v{{ .Version }}") {
				t.Errorf("%s build %s: ldflags %v do not stamp main.version", mod.Name, id, b["ldflags"])
			}
			if !reflect.DeepEqual(all[id], b) {
				t.Errorf("%s build %s differs in the root .goreleaser.yaml:\n root:   %v\n module: %v", mod.Name, id, all[id], b)
			}
		}
		if !slices.Equal(ids, mod.Binaries) {
			t.Errorf("%s builds %v, versions.yaml lists %v", mod.Name, ids, mod.Binaries)
		}
		listed = append(listed, mod.Binaries...)
	}
	if len(all) != len(listed) {
		t.Errorf("the root .goreleaser.yaml builds %d binaries, versions.yaml lists %d: %v", len(all), len(listed), listed)
	}
}
