package steps

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

func TestLoad(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	machine := func(annotations map[string]string) *v1beta1.Machine {
		return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", Annotations: annotations}}
	}
	unavailable := errors.New("apiserver unavailable")
	tests := map[string]struct {
		stored   *v1beta1.Machine
		getErr   error
		wantOK   bool
		wantErr  error
		wantGone bool
	}{
		"an object to reconcile":        {stored: machine(nil), wantOK: true},
		"gone: forgotten, no error":     {wantGone: true},
		"paused by our annotation":      {stored: machine(map[string]string{v1beta1.PausedAnnotation: ""})},
		"paused by Cluster API's":       {stored: machine(map[string]string{v1beta1.ClusterAPIPausedAnnotation: "true"})},
		"a read that fails is returned": {stored: machine(nil), getErr: unavailable, wantErr: unavailable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			if tc.stored != nil {
				b = b.WithObjects(tc.stored)
			}
			gone := false
			got := &v1beta1.Machine{}
			ok, err := Load(context.Background(), b.Build(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "m"}}, got, func() { gone = true })
			if ok != tc.wantOK || !errors.Is(err, tc.wantErr) || gone != tc.wantGone {
				t.Errorf("Load = %v, %v (gone called: %v); want %v, %v (gone: %v)", ok, err, gone, tc.wantOK, tc.wantErr, tc.wantGone)
			}
			if ok && got.Name != "m" {
				t.Errorf("Load returned ok without reading the object: %+v", got.ObjectMeta)
			}
		})
	}
}
