package expect

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Write is one write a controller made: its verb (create, update, patch, apply, delete), the name
// of the object and the subresource ("" for the object itself).
type Write struct {
	Verb, Name, Subresource string
}

// Writes is a client that records every write made through it, so that a reconcile-once spec can
// assert what a step cost, not only what it left behind. Reads pass through.
type Writes struct {
	client.Client
	mu  sync.Mutex
	all []Write
}

// RecordWrites wraps c.
func RecordWrites(c client.Client) *Writes { return &Writes{Client: c} }

// To returns the writes made to the object named name (any kind), in order.
func (w *Writes) To(name string) []Write {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Write
	for _, x := range w.all {
		if x.Name == name {
			out = append(out, x)
		}
	}
	return out
}

// Reset forgets the writes recorded so far.
func (w *Writes) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = nil
}

func (w *Writes) record(verb, name, sub string, err error) {
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, Write{Verb: verb, Name: name, Subresource: sub})
}

func (w *Writes) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := w.Client.Create(ctx, obj, opts...)
	w.record("create", obj.GetName(), "", err)
	return err
}

func (w *Writes) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := w.Client.Update(ctx, obj, opts...)
	w.record("update", obj.GetName(), "", err)
	return err
}

func (w *Writes) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := w.Client.Patch(ctx, obj, patch, opts...)
	w.record("patch", obj.GetName(), "", err)
	return err
}

func (w *Writes) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	err := w.Client.Apply(ctx, obj, opts...)
	w.record("apply", applyName(obj), "", err)
	return err
}

func (w *Writes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := w.Client.Delete(ctx, obj, opts...)
	w.record("delete", obj.GetName(), "", err)
	return err
}

func (w *Writes) Status() client.SubResourceWriter { return w.SubResource("status") }

func (w *Writes) SubResource(sub string) client.SubResourceClient {
	return &subWrites{SubResourceClient: w.Client.SubResource(sub), w: w, sub: sub}
}

type subWrites struct {
	client.SubResourceClient
	w   *Writes
	sub string
}

func (s *subWrites) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	err := s.SubResourceClient.Create(ctx, obj, subResource, opts...)
	s.w.record("create", obj.GetName(), s.sub, err)
	return err
}

func (s *subWrites) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceClient.Update(ctx, obj, opts...)
	s.w.record("update", obj.GetName(), s.sub, err)
	return err
}

func (s *subWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceClient.Patch(ctx, obj, patch, opts...)
	s.w.record("patch", obj.GetName(), s.sub, err)
	return err
}

func (s *subWrites) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	err := s.SubResourceClient.Apply(ctx, obj, opts...)
	s.w.record("apply", applyName(obj), s.sub, err)
	return err
}

// applyName is the name an apply configuration names, "" when it has none.
func applyName(obj runtime.ApplyConfiguration) string {
	if n, ok := obj.(interface{ GetName() *string }); ok && n.GetName() != nil {
		return *n.GetName()
	}
	return ""
}
