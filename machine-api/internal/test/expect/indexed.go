package expect

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Indexed is a client straight to the API server that answers a List with client.MatchingFields on
// one of a module's field indexes the way the manager's cache does: it lists without the field
// selector and keeps the objects the index function gives that value. A reconcile-once spec builds
// a controller that looks objects up by index with it, and reads what it wrote at once, with no
// cache to wait for.
type Indexed struct {
	client.Client
	indexes map[string]client.IndexerFunc
}

// IndexedClient wraps c with the field indexes register adds (index.Register).
func IndexedClient(ctx context.Context, c client.Client, register func(context.Context, client.FieldIndexer) error) (*Indexed, error) {
	x := &Indexed{Client: c, indexes: map[string]client.IndexerFunc{}}
	if err := register(ctx, x); err != nil {
		return nil, err
	}
	return x, nil
}

// IndexField records an index: Indexed is the field indexer register registers with.
func (x *Indexed) IndexField(_ context.Context, _ client.Object, name string, f client.IndexerFunc) error {
	x.indexes[name] = f
	return nil
}

// List implements client.Reader.
func (x *Indexed) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.FieldSelector == nil || o.FieldSelector.Empty() {
		return x.Client.List(ctx, list, opts...)
	}
	want := o.FieldSelector.Requirements()
	o.FieldSelector = fields.Everything()
	if err := x.Client.List(ctx, list, o); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	var kept []runtime.Object
	for _, item := range items {
		ok, err := x.matches(item.(client.Object), want)
		if err != nil {
			return err
		}
		if ok {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

func (x *Indexed) matches(obj client.Object, want fields.Requirements) (bool, error) {
	for _, req := range want {
		f, ok := x.indexes[req.Field]
		if !ok {
			return false, fmt.Errorf("no field index %q is registered", req.Field)
		}
		found := false
		for _, v := range f(obj) {
			found = found || v == req.Value
		}
		if !found {
			return false, nil
		}
	}
	return true, nil
}
