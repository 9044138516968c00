package localstack

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"machineapi.dev/drain/testplane/process"
)

// TestInstallManifests renders each module's config/default as `make manifests` does and applies
// it to a fresh local control plane, first as a server-side dry run, then for real: every object
// must be accepted (the Deployments do not run: there is no kubelet).
func TestInstallManifests(t *testing.T) {
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test` (it builds the control plane first)")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plane, err := Start(ctx, Config{BinDir: bin, StateDir: t.TempDir(), APIServerPort: freePort(t), EtcdPort: freePortPair(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop)
	cfg, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	rendered := 0
	for _, module := range []string{"machine-api", "nodelink", "cluster-api"} {
		dir := filepath.Join(root, module, "config", "default")
		if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); errors.Is(err, os.ErrNotExist) {
			t.Logf("%s has no config/default yet", module)
			continue
		}
		out, err := exec.Command(filepath.Join(bin, "kubectl"), "kustomize", dir).Output()
		if err != nil {
			t.Fatalf("rendering %s: %v", dir, err)
		}
		rendered++
		t.Run(module, func(t *testing.T) { applyDryRunThenForReal(ctx, t, cfg, out) })
	}
	if rendered == 0 {
		t.Fatal("no module has a config/default: nothing was checked")
	}
}

func freePort(t *testing.T) int {
	port, err := process.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// freePortPair is a port for etcd's client, with the next one free for its peer port.
func freePortPair(t *testing.T) int {
	port, err := FreePortPair()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func applyDryRunThenForReal(ctx context.Context, t *testing.T, cfg *rest.Config, manifest []byte) {
	objs, err := decodeAll(manifest)
	if err != nil {
		t.Fatal(err)
	}
	real, err := NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dry.DryRun = true
	// A dry run of namespaced objects needs their namespace, as `kubectl apply --dry-run=server`
	// on a fresh cluster does: create the namespaces first.
	var deployments []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			if err := real.Apply(ctx, o); err != nil {
				t.Fatalf("creating namespace %s: %v", o.GetName(), err)
			}
		case "Deployment":
			deployments = append(deployments, o)
		}
	}
	if len(deployments) == 0 {
		t.Fatal("the manifest has no Deployment")
	}
	for _, o := range objs {
		if err := dry.Apply(ctx, o); err != nil {
			t.Fatalf("server-side dry run of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	apps := real.Dynamic().Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	for _, d := range deployments {
		if _, err := apps.Namespace(d.GetNamespace()).Get(ctx, d.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the dry run stored Deployment %s/%s (%v)", d.GetNamespace(), d.GetName(), err)
		}
	}
	for _, o := range objs {
		if err := real.Apply(ctx, o); err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	for _, d := range deployments {
		if _, err := apps.Namespace(d.GetNamespace()).Get(ctx, d.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatalf("Deployment %s/%s was not stored: %v", d.GetNamespace(), d.GetName(), err)
		}
	}
}
