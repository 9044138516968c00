package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"machineapi.dev/hack/tools/localstack"
)

// schemaFloors is the Machine write floor measured on two copies of the Machine CRD under groups
// of their own: one as generated, one without any x-kubernetes-validations (CEL) rule. Both are
// written the same way (unstructured, JSON), so the difference is what the CEL rules cost the API
// server on a create plus a status update.
type schemaFloors struct {
	WithRules    schemaFloor `json:"withRules"`
	WithoutRules schemaFloor `json:"withoutRules"`
}

// schemaFloor is the best of a copy's measurements, and every measurement's writes/s.
type schemaFloor struct {
	floorResult
	Runs []float64 `json:"runsWritesPerSecond"`
}

// measureSchemaFloors installs the two copies and measures the floor on each, in the Machine
// floor's namespace (which must exist).
func measureSchemaFloors(ctx context.Context, cfg *rest.Config, root string, n, workers int) (schemaFloors, error) {
	var out schemaFloors
	data, err := os.ReadFile(filepath.Join(root, "machine-api/config/crd/bases/machine.machineapi.dev_machines.yaml"))
	if err != nil {
		return out, err
	}
	applier, err := localstack.NewApplier(unthrottled(cfg))
	if err != nil {
		return out, err
	}
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	if err != nil {
		return out, err
	}
	// Each copy is measured twice, alternately, and the better figure kept: a change in the
	// machine's load during the measurement shows as a spread instead of favouring one copy.
	for _, v := range []struct {
		group string
		strip bool
		into  *schemaFloor
	}{
		{"rules.floor.bench", false, &out.WithRules},
		{"norules.floor.bench", true, &out.WithoutRules},
		{"rules.floor.bench", false, &out.WithRules},
		{"norules.floor.bench", true, &out.WithoutRules},
	} {
		crd := map[string]any{}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return out, fmt.Errorf("reading the Machine CRD: %w", err)
		}
		u := &unstructured.Unstructured{Object: crd}
		u.SetName("machines." + v.group)
		if err := unstructured.SetNestedField(u.Object, v.group, "spec", "group"); err != nil {
			return out, err
		}
		if v.strip {
			stripValidations(u.Object)
		}
		if err := applier.Apply(ctx, u); err != nil {
			return out, fmt.Errorf("installing a copy of the Machine CRD: %w", err)
		}
		gvr := schema.GroupVersionResource{Group: v.group, Version: "v1beta1", Resource: "machines"}
		res, err := measureUnstructuredFloor(ctx, dyn, gvr, n, workers)
		if err != nil {
			return out, err
		}
		v.into.Runs = append(v.into.Runs, math.Round(res.WritesPerSec))
		if res.WritesPerSec > v.into.WritesPerSec {
			v.into.floorResult = res
		}
	}
	return out, nil
}

// stripValidations removes every x-kubernetes-validations from a CRD's schemas.
func stripValidations(v any) {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "x-kubernetes-validations")
		for _, c := range t {
			stripValidations(c)
		}
	case []any:
		for _, c := range t {
			stripValidations(c)
		}
	}
}

// measureUnstructuredFloor creates n objects of a copy of the Machine CRD and writes each one's
// status once, like measureMachineFloor.
func measureUnstructuredFloor(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, n, workers int) (floorResult, error) {
	ri := dyn.Resource(gvr).Namespace(floorNamespace)
	apiVersion := gvr.Group + "/" + gvr.Version
	res, err := runWriters(n, workers, func(i int) error {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": "Machine",
			"metadata": map[string]any{"name": fmt.Sprintf("floor-%05d", i), "namespace": floorNamespace},
			"spec":     map[string]any{"providerSpec": map[string]any{"value": map[string]any{"instanceType": "small"}}},
		}}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		created.Object["status"] = map[string]any{
			"phase": "Provisioning",
			"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "floor",
				"lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z")}},
		}
		_, err = ri.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return floorResult{}, fmt.Errorf("measuring the write floor of %s: %w", strings.TrimSuffix(gvr.String(), ", "), err)
	}
	return res, ri.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}
