package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side apply field manager of everything make run applies.
const FieldManager = "machineapi-localstack"

// Applier applies manifests with server-side apply.
type Applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	// DryRun makes every apply a server-side dry run: validated and admitted, never stored.
	DryRun bool
}

// NewApplier returns an Applier for the API server cfg points at.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// Dynamic returns the applier's dynamic client.
func (a *Applier) Dynamic() dynamic.Interface { return a.dyn }

// ManifestFiles returns the .yaml files of each path: a file itself, or the files of a folder
// (not recursive, without kustomization.yaml), sorted. Missing paths are skipped: a module may not have generated CRDs yet.
func ManifestFiles(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.yaml"))
		if err != nil {
			return nil, err
		}
		sort.Strings(matches)
		for _, m := range matches {
			if filepath.Base(m) != "kustomization.yaml" { // kustomize's own file, not a manifest
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// ApplyFiles applies every object of the given files and returns them. CRDs are waited on until
// established, so objects of their kinds can follow in a later call.
func (a *Applier) ApplyFiles(ctx context.Context, files ...string) ([]*unstructured.Unstructured, error) {
	var applied []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return applied, err
		}
		objs, err := decodeAll(data)
		if err != nil {
			return applied, fmt.Errorf("%s: %w", f, err)
		}
		for _, obj := range objs {
			if err := a.Apply(ctx, obj); err != nil {
				return applied, fmt.Errorf("%s: applying %s %s: %w", f, obj.GetKind(), obj.GetName(), err)
			}
			applied = append(applied, obj)
		}
	}
	return applied, nil
}

// Apply server-side applies one object, then waits for a CRD to be established.
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	ri, err := a.resource(obj)
	if err != nil {
		return err
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: &force}
	if a.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts); err != nil {
		return err
	}
	if gvk.Kind == "CustomResourceDefinition" && !a.DryRun {
		a.mapper.Reset()
		return waitEstablished(ctx, a.dyn, obj.GetName())
	}
	return nil
}

// resource is the dynamic client of obj's kind, in its namespace (default when it names none).
func (a *Applier) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource), nil
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return a.dyn.Resource(mapping.Resource).Namespace(ns), nil
}

func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if crd != nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("CRD %s was not established after 30s", name)
}

func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("an object without kind: %v", m)
		}
		out = append(out, u)
	}
}

// DeleteAndWait deletes objs, in reverse order (what was applied last goes first), and waits until
// each is gone from the API server (its finalizers done) or ctx ends. Objects already gone are
// skipped; progress goes to log.
func (a *Applier) DeleteAndWait(ctx context.Context, objs []*unstructured.Unstructured, log io.Writer) error {
	for i := len(objs) - 1; i >= 0; i-- {
		obj := objs[i]
		ri, err := a.resource(obj)
		if err != nil {
			return err
		}
		if err := ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		fmt.Fprintf(log, "deleting %s %s ...\n", obj.GetKind(), obj.GetName())
		for {
			_, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s %s is not gone yet: %w", obj.GetKind(), obj.GetName(), ctx.Err())
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}
