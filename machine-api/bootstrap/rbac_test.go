package bootstrap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestClusterRoleBindingsMatchTheConfig keeps config/bootstrap/cluster-role-bindings.yaml (what
// an installation applies) and ClusterRoleBindings (what Go callers and tests apply) the same.
func TestClusterRoleBindingsMatchTheConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "config", "bootstrap", "cluster-role-bindings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML []rbacv1.ClusterRoleBinding
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var b rbacv1.ClusterRoleBinding
		if err := dec.Decode(&b); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if b.Name != "" {
			fromYAML = append(fromYAML, b)
		}
	}
	if !equality.Semantic.DeepEqual(fromYAML, ClusterRoleBindings()) {
		t.Errorf("config/bootstrap/cluster-role-bindings.yaml holds\n%+v\nClusterRoleBindings() returns\n%+v", fromYAML, ClusterRoleBindings())
	}
}
