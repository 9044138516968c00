package importcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree creates files (path -> content) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func goFile(pkg string, imports ...string) string {
	var b strings.Builder
	b.WriteString("package " + pkg + "\n\nimport (\n")
	for _, imp := range imports {
		b.WriteString("\t_ \"" + imp + "\"\n")
	}
	b.WriteString(")\n")
	return b.String()
}

func gomod(path string) string { return "module " + path + "\n\ngo 1.26.0\n" }

func TestCheck(t *testing.T) {
	base := map[string]string{
		"drain/go.mod":                         gomod("machineapi.dev/drain"),
		"nodelink/go.mod":                      gomod("machineapi.dev/nodelink"),
		"machine-api/go.mod":                   gomod("machineapi.dev/machine-api"),
		"cluster-api/go.mod":                   gomod("machineapi.dev/cluster-api"),
		"hack/tools/go.mod":                    gomod("machineapi.dev/hack/tools"),
		"machine-api/examples/provider/go.mod": gomod("example.com/provider"),
		"providers/libvirt/go.mod":             gomod("machineapi.dev/provider-libvirt"),
	}
	tests := map[string]struct {
		file    string
		content string
		rule    string // substring of the expected rule; "" means no violation
	}{
		"machine-api may import drain and nodelink": {
			file:    "machine-api/internal/controller/machine/machine.go",
			content: goFile("machine", "machineapi.dev/drain", "machineapi.dev/nodelink", "sigs.k8s.io/controller-runtime"),
		},
		"cluster-api may import machine-api": {
			file:    "cluster-api/internal/controller/cluster/cluster.go",
			content: goFile("cluster", "machineapi.dev/machine-api/api/v1beta1"),
		},
		"drain may not import machine-api": {
			file:    "drain/drain.go",
			content: goFile("drain", "machineapi.dev/machine-api/api/v1beta1"),
			rule:    "may not depend on machineapi.dev/machine-api",
		},
		"machine-api may not import cluster-api": {
			file:    "machine-api/internal/controller/machine/machine.go",
			content: goFile("machine", "machineapi.dev/cluster-api/api/v1beta1"),
			rule:    "may not depend on machineapi.dev/cluster-api",
		},
		"nodelink may not import machine types, tests included": {
			file:    "nodelink/link_test.go",
			content: goFile("nodelink", "machineapi.dev/machine-api/api/v1beta1"),
			rule:    "may not depend on machineapi.dev/machine-api",
		},
		"only drain imports kubectl": {
			file:    "machine-api/internal/controller/machine/drain.go",
			content: goFile("machine", "k8s.io/kubectl/pkg/drain"),
			rule:    "only the drain module may import k8s.io/kubectl",
		},
		"drain imports kubectl": {
			file:    "drain/drain.go",
			content: goFile("drain", "k8s.io/kubectl/pkg/drain", "k8s.io/client-go/kubernetes"),
		},
		"api packages import apimachinery and api": {
			file:    "machine-api/api/v1beta1/types.go",
			content: goFile("v1beta1", "fmt", "k8s.io/api/core/v1", "k8s.io/apimachinery/pkg/apis/meta/v1"),
		},
		"cluster api imports machine api types": {
			file:    "cluster-api/api/v1beta1/types.go",
			content: goFile("v1beta1", "machineapi.dev/machine-api/api/v1beta1"),
		},
		"api packages may not import controller-runtime": {
			file:    "machine-api/api/v1beta1/types.go",
			content: goFile("v1beta1", "sigs.k8s.io/controller-runtime/pkg/scheme"),
			rule:    "packages under api/ import only",
		},
		"api packages may not import non-api repository packages": {
			file:    "machine-api/api/v1beta1/types.go",
			content: goFile("v1beta1", "machineapi.dev/machine-api/provider"),
			rule:    "packages under api/ import only",
		},
		"example provider imports machine-api": {
			file:    "machine-api/examples/provider/main.go",
			content: goFile("main", "machineapi.dev/machine-api/manager"),
		},
		"example provider may not import nodelink": {
			file:    "machine-api/examples/provider/main.go",
			content: goFile("main", "machineapi.dev/nodelink"),
			rule:    "a provider imports only machineapi.dev/machine-api",
		},
		"a provider of providers/ imports machine-api and its own packages": {
			file:    "providers/libvirt/libvirtprovider/provider.go",
			content: goFile("libvirtprovider", "machineapi.dev/machine-api/provider", "machineapi.dev/provider-libvirt/api/v1beta1"),
		},
		"a provider of providers/ may not import nodelink": {
			file:    "providers/libvirt/libvirtprovider/provider.go",
			content: goFile("libvirtprovider", "machineapi.dev/nodelink"),
			rule:    "a provider imports only machineapi.dev/machine-api",
		},
		"a provider's api package imports only api packages": {
			file:    "providers/libvirt/api/v1beta1/types.go",
			content: goFile("v1beta1", "machineapi.dev/machine-api/provider"),
			rule:    "packages under api/ import only",
		},
		"a controller may not import another controller of its module": {
			file:    "machine-api/internal/controller/machinedeployment/controller.go",
			content: goFile("machinedeployment", "machineapi.dev/machine-api/internal/controller/machineset"),
			rule:    "controller package machinedeployment may not import controller package machineset",
		},
		"a controller's tests may not import another controller either": {
			file:    "cluster-api/internal/controller/remotedrain/remotedrain_test.go",
			content: goFile("remotedrain_test", "machineapi.dev/cluster-api/internal/controller/cluster"),
			rule:    "controller package remotedrain may not import controller package cluster",
		},
		"a controller's sub-package may not import another controller": {
			file:    "machine-api/internal/controller/machine/phases/drain.go",
			content: goFile("phases", "machineapi.dev/machine-api/internal/controller/machineset/scale"),
			rule:    "controller package machine may not import controller package machineset",
		},
		"a controller imports its own package, its sub-packages and shared internal packages": {
			file: "machine-api/internal/controller/machineset/machineset_test.go",
			content: goFile("machineset_test", "machineapi.dev/machine-api/internal/controller/machineset",
				"machineapi.dev/machine-api/internal/controller/machineset/order", "machineapi.dev/machine-api/internal/index"),
		},
		"a package outside internal/controller may import controllers": {
			file:    "machine-api/manager/manager.go",
			content: goFile("manager", "machineapi.dev/machine-api/internal/controller/machine", "machineapi.dev/machine-api/internal/controller/machineset"),
		},
		"a name prefix is not the same controller": {
			file:    "machine-api/internal/controller/machine/watch.go",
			content: goFile("machine", "machineapi.dev/machine-api/internal/controller/machinehealthcheck"),
			rule:    "controller package machine may not import controller package machinehealthcheck",
		},
		"dev tools may import anything": {
			file:    "hack/tools/bench/main.go",
			content: goFile("main", "machineapi.dev/cluster-api/api/v1beta1"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{tc.file: tc.content}
			for k, v := range base {
				files[k] = v
			}
			got, err := Check(writeTree(t, files))
			if err != nil {
				t.Fatal(err)
			}
			if tc.rule == "" {
				if len(got) != 0 {
					t.Fatalf("want no violation, got %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Rule, tc.rule) || got[0].File != tc.file {
				t.Fatalf("want one violation in %s containing %q, got %v", tc.file, tc.rule, got)
			}
		})
	}
}

// TestRepositoryFollowsTheRules runs the check on this checkout, so go test in hack/tools fails
// on the same imports make verify does.
func TestRepositoryFollowsTheRules(t *testing.T) {
	got, err := Check(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Error(v)
	}
}
