package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyAdmissionPolicies creates the ValidatingAdmissionPolicies (and bindings) of dir, as an
// installation does, and waits until the API server enforces them.
func applyAdmissionPolicies(cfg *rest.Config, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // kustomize's own file, not a manifest
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := c.Create(ctx, u); err != nil {
				return fmt.Errorf("%s: creating %s %s: %w", f, u.GetKind(), u.GetName(), err)
			}
		}
	}
	// Policies take effect once the API server's policy informer has seen them.
	time.Sleep(time.Second)
	return nil
}
