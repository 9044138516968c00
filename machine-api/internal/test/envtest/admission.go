package envtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// policyTimeout bounds the wait for an admission policy to take effect.
const policyTimeout = 30 * time.Second

// probes say, for each ValidatingAdmissionPolicy of config/admission, how to tell that the API
// server enforces it: a policy takes effect only once the API server's policy informer has seen
// it, a moment after it is created. A policy without a probe is an error, so that a new policy
// cannot be added without the tests waiting for it.
var probes = map[string]func(ctx context.Context, c client.Client) error{
	"machine-lifecycle-hooks.machine.machineapi.dev": probeLifecycleHooks,
}

// applyAdmissionPolicies creates the ValidatingAdmissionPolicies (and bindings) of dir, as an
// installation does, and waits until the API server enforces them.
func applyAdmissionPolicies(cfg *rest.Config, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return err
	}
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	ctx := context.Background()
	var policies []string
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
			if u.GetKind() == "ValidatingAdmissionPolicy" {
				policies = append(policies, u.GetName())
			}
		}
	}
	for _, name := range policies {
		probe, ok := probes[name]
		if !ok {
			return fmt.Errorf("admission policy %s has no probe in internal/test/envtest/admission.go: add one, so that tests wait until it is enforced", name)
		}
		if err := probe(ctx, c); err != nil {
			return fmt.Errorf("waiting for admission policy %s to be enforced: %w", name, err)
		}
	}
	return nil
}

// probeLifecycleHooks waits until adding a pre-drain hook to a Machine being deleted is refused. It
// creates a Machine held by a finalizer of its own, deletes it, tries the update as a dry run
// until the policy refuses it, and lets the Machine go.
func probeLifecycleHooks(ctx context.Context, c client.Client) error {
	const finalizer = "test.machineapi.dev/admission-probe"
	m := &v1beta1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "admission-probe", Finalizers: []string{finalizer}},
		Spec: v1beta1.MachineSpec{
			ProviderSpec: v1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{}`)}},
		},
	}
	if err := c.Create(ctx, m); err != nil {
		return fmt.Errorf("creating the probe Machine: %w", err)
	}
	if err := c.Delete(ctx, m); err != nil {
		return fmt.Errorf("deleting the probe Machine: %w", err)
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, policyTimeout, true, func(ctx context.Context) (bool, error) {
		cur := &v1beta1.Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
			return false, err
		}
		cur.Spec.LifecycleHooks.PreDrain = append(cur.Spec.LifecycleHooks.PreDrain, v1beta1.LifecycleHook{Name: "probe", Owner: "envtest"})
		last = c.Update(ctx, cur, client.DryRunAll)
		switch {
		case last == nil:
			return false, nil // not enforced yet
		case strings.Contains(last.Error(), "a hook cannot be added to a Machine that is being deleted"):
			return true, nil
		default:
			return false, nil // a conflict, or another refusal: look again
		}
	})
	if err != nil {
		answer := "none"
		if last != nil {
			answer = last.Error()
		}
		return fmt.Errorf("%w (last answer to the probe: %s)", err, answer)
	}
	cur := &v1beta1.Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
		return err
	}
	cur.Finalizers = nil
	if err := c.Update(ctx, cur); err != nil {
		return fmt.Errorf("releasing the probe Machine: %w", err)
	}
	return nil
}
