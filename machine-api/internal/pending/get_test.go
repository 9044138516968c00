package pending

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestGet: a reconcile reads its object as it last wrote it, and forgets it once it is gone.
func TestGet(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "ns", Name: "set"}
	clk := clocktesting.NewFakeClock(t0)

	written, children := New(clk, timeout), New(clk, timeout)
	c := fake.NewClientBuilder().WithObjects(obj("set", "5")).Build()
	cached := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cached); err != nil {
		t.Fatal(err)
	}
	written.Wrote(cached.ResourceVersion, obj("set", "6"))
	children.Created(cached, "a")

	got, err := Get(ctx, c, key, &corev1.ConfigMap{}, written, children)
	if err != nil || got == nil || got.ResourceVersion != "6" {
		t.Fatalf("Get = %v, %v: want the object as written (version 6), not the cached one", got, err)
	}

	if err := c.Delete(ctx, cached); err != nil {
		t.Fatal(err)
	}
	got, err = Get(ctx, c, key, &corev1.ConfigMap{}, written, children)
	if err != nil || got != nil {
		t.Fatalf("Get of a gone object = %v, %v: want nil and no error", got, err)
	}
	if written.Len() != 0 || children.Len() != 0 {
		t.Errorf("after the object is gone %d and %d owners are remembered, want none", written.Len(), children.Len())
	}

	boom := errors.New("connection refused")
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	if _, err := Get(ctx, failing, key, &corev1.ConfigMap{}, written); !errors.Is(err, boom) {
		t.Errorf("Get with a failing read = %v, want the error", err)
	}
}
