package localstack

import (
	"context"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NodeBootstrapManifests is the folder, relative to the repository root, of what a cluster needs
// for machines to join with bootstrap tokens (machineapi.dev/machine-api/bootstrap): the
// ClusterRoleBindings that let a token's group ask for a client certificate and have it approved,
// and the Role on Secrets in kube-system that the manager mints tokens with.
const NodeBootstrapManifests = "machine-api/config/bootstrap"

// ApplyNodeBootstrap applies the manifests of NodeBootstrapManifests in the repository at root,
// to a plane started with Config.NodeBootstrap, and returns them. Finding none is an error: the
// kubelets could not join.
func ApplyNodeBootstrap(ctx context.Context, a *Applier, root string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(root, NodeBootstrapManifests)
	files, err := ManifestFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifests in %s: kubelets could not join with bootstrap tokens", dir)
	}
	objs, err := a.ApplyFiles(ctx, files...)
	if err != nil {
		return objs, fmt.Errorf("applying the node bootstrap RBAC: %w", err)
	}
	return objs, nil
}
