package envtest

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateWithStatus creates obj and then writes its status through the status subresource, as
// another controller would (a create drops the status of kinds with a status subresource). The
// status write retries on conflicts with the linker under test, merging: every status field obj
// has is set, and its conditions are added to those already there. obj ends up as stored.
func CreateWithStatus(ctx context.Context, c client.Client, obj client.Object) error {
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %s: %w", obj.GetName(), err)
	}
	status, ok := want["status"].(map[string]any)
	if !ok {
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		got, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		merged := mergeStatus(got["status"], status)
		if equality.Semantic.DeepEqual(got["status"], merged) {
			return nil // kept on create (Nodes)
		}
		got["status"] = merged
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got, obj); err != nil {
			return err
		}
		return c.Status().Update(ctx, obj)
	})
	if err != nil {
		return fmt.Errorf("writing the status of %s: %w", obj.GetName(), err)
	}
	return nil
}

func mergeStatus(current any, want map[string]any) map[string]any {
	out := map[string]any{}
	if cur, ok := current.(map[string]any); ok {
		for k, v := range cur {
			out[k] = v
		}
	}
	for k, v := range want {
		if k != "conditions" {
			out[k] = v
			continue
		}
		conds, _ := out[k].([]any)
		out[k] = append(conds, v.([]any)...)
	}
	return out
}
