package consistency

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClientOptions say where a guarded client's writes are looked for.
type ClientOptions struct {
	// Cache is what the controllers read the written objects from (the manager's cache).
	Cache client.Reader
	// APIReader reads from the API server: whether an unsure create was stored. Without it such
	// a create is awaited until the timeout.
	APIReader client.Reader
	// Uncached are kinds the controllers read from the API server, never the cache (as
	// client.CacheOptions.DisableFor): their writes are not awaited.
	Uncached []client.Object
	// Unstructured: unstructured objects are read from the cache (as
	// client.CacheOptions.Unstructured), so their writes are awaited too.
	Unstructured bool
}

// NewClient returns c recording, for the guarded reconcile in each call's context, every write it
// makes to an object the controllers read from o.Cache (see the package documentation). Reads and
// DeleteAllOf pass through. A client NewClient returned is returned as it is (reading unstructured
// objects from its cache too when o.Unstructured says so).
func NewClient(c client.Client, o ClientOptions) client.Client {
	if g, ok := c.(*guarded); ok {
		if o.Unstructured && !g.unstructured {
			cp := *g
			cp.unstructured = true
			return &cp
		}
		return g
	}
	g := &guarded{Client: c, at: &view{cache: o.Cache, api: o.APIReader, scheme: c.Scheme()}, unstructured: o.Unstructured,
		uncached: map[schema.GroupKind]bool{}}
	for _, obj := range o.Uncached {
		if gvk, err := c.GroupVersionKindFor(obj); err == nil {
			g.uncached[gvk.GroupKind()] = true
		}
	}
	return g
}

// guarded is the client NewClient returns.
type guarded struct {
	client.Client
	at           *view
	uncached     map[schema.GroupKind]bool
	unstructured bool
}

var _ client.Client = &guarded{}

func (g *guarded) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := g.Client.Create(ctx, obj, opts...)
	if len((&client.CreateOptions{}).ApplyOptions(opts).DryRun) > 0 {
		return err
	}
	switch {
	case err == nil:
		g.recordObject(ctx, obj, written{rv: obj.GetResourceVersion(), created: true})
	case !Refused(err) && obj.GetName() != "":
		g.recordObject(ctx, obj, written{created: true, unsure: true})
	}
	return err
}

func (g *guarded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := g.Client.Update(ctx, obj, opts...)
	if err == nil && len((&client.UpdateOptions{}).ApplyOptions(opts).DryRun) == 0 {
		g.recordObject(ctx, obj, written{rv: obj.GetResourceVersion()})
	}
	return err
}

func (g *guarded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := g.Client.Patch(ctx, obj, patch, opts...)
	if err == nil && len((&client.PatchOptions{}).ApplyOptions(opts).DryRun) == 0 {
		g.recordObject(ctx, obj, written{rv: obj.GetResourceVersion()})
	}
	return err
}

func (g *guarded) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	err := g.Client.Apply(ctx, ac, opts...)
	if err == nil && len((&client.ApplyOptions{}).ApplyOptions(opts).DryRun) == 0 {
		g.recordApplied(ctx, ac)
	}
	return err
}

// Delete records the deletion when the API server took it, or says the object is gone already.
func (g *guarded) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := g.Client.Delete(ctx, obj, opts...)
	o := (&client.DeleteOptions{}).ApplyOptions(opts)
	if (err == nil || apierrors.IsNotFound(err)) && len(o.DryRun) == 0 {
		uid := obj.GetUID()
		if uid == "" && o.Preconditions != nil && o.Preconditions.UID != nil {
			uid = *o.Preconditions.UID
		}
		g.recordObject(ctx, obj, written{deleted: true, uid: uid})
	}
	return err
}

func (g *guarded) Status() client.SubResourceWriter {
	return &subWriter{SubResourceWriter: g.Client.Status(), g: g}
}

func (g *guarded) SubResource(subResource string) client.SubResourceClient {
	c := g.Client.SubResource(subResource)
	return &subClient{SubResourceReader: c, subWriter: subWriter{SubResourceWriter: c, g: g}}
}

// subWriter records the writes of a subresource (status) as writes of the object: they change
// its resourceVersion. A subresource create (an eviction) writes another object: not recorded.
type subWriter struct {
	client.SubResourceWriter
	g *guarded
}

func (s *subWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceWriter.Update(ctx, obj, opts...)
	if err == nil && len((&client.SubResourceUpdateOptions{}).ApplyOptions(opts).DryRun) == 0 {
		s.g.recordObject(ctx, obj, written{rv: obj.GetResourceVersion()})
	}
	return err
}

func (s *subWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	err := s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
	if err == nil && len((&client.SubResourcePatchOptions{}).ApplyOptions(opts).DryRun) == 0 {
		s.g.recordObject(ctx, obj, written{rv: obj.GetResourceVersion()})
	}
	return err
}

func (s *subWriter) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	err := s.SubResourceWriter.Apply(ctx, ac, opts...)
	if err == nil && len((&client.SubResourceApplyOptions{}).ApplyOpts(opts).DryRun) == 0 {
		s.g.recordApplied(ctx, ac)
	}
	return err
}

type subClient struct {
	client.SubResourceReader
	subWriter
}

// recordObject records w, a write of obj, for the guarded reconcile in ctx, when the controllers
// read obj's kind from the cache.
func (g *guarded) recordObject(ctx context.Context, obj client.Object, w written) {
	to, ok := ctx.Value(requestKey{}).(recorder)
	if !ok {
		return
	}
	switch obj.(type) {
	case *metav1.PartialObjectMetadata:
		return
	case runtime.Unstructured:
		if !g.unstructured {
			return
		}
	}
	gvk, err := g.GroupVersionKindFor(obj)
	if err != nil || g.uncached[gvk.GroupKind()] {
		return
	}
	w.at = g.at
	to.guard.record(to.key, objectRef{gvk: gvk, key: client.ObjectKeyFromObject(obj)}, w)
}

// recordApplied records an apply: the client decoded the API server's answer, the whole object,
// into ac.
func (g *guarded) recordApplied(ctx context.Context, ac runtime.ApplyConfiguration) {
	if _, ok := ctx.Value(requestKey{}).(recorder); !ok {
		return
	}
	data, err := json.Marshal(ac)
	if err != nil {
		return
	}
	answer := &metav1.PartialObjectMetadata{}
	if err := json.Unmarshal(data, answer); err != nil || answer.Name == "" {
		return
	}
	gvk := answer.GroupVersionKind()
	var obj client.Object = g.at.object(gvk)
	obj.SetNamespace(answer.Namespace)
	obj.SetName(answer.Name)
	g.recordObject(ctx, obj, written{rv: answer.ResourceVersion})
}

// Refused reports whether a write failed with the API server's answer that it stored nothing.
// Anything else (a broken connection, a timeout, an internal error) leaves the outcome unknown: a
// create may have been stored, and creating another object for the same need is how a set
// overshoots after an API server restart.
func Refused(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch code := status.Status().Code; {
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return false
	case code == http.StatusTooManyRequests:
		return true // refused before it was processed (API priority and fairness)
	default:
		return code >= 400 && code < 500
	}
}

// view is where a guarded client's writes are looked for.
type view struct {
	cache  client.Reader
	api    client.Reader
	scheme *runtime.Scheme
}

// object returns a new, empty object of kind gvk: typed when the scheme knows it.
func (v *view) object(gvk schema.GroupVersionKind) client.Object {
	if o, err := v.scheme.New(gvk); err == nil {
		if obj, ok := o.(client.Object); ok {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			return obj
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// cached returns the object ref names as the cache holds it, nil when it does not hold it.
func (v *view) cached(ctx context.Context, ref objectRef) (client.Object, error) {
	return get(ctx, v.cache, v.object(ref.gvk), ref.key, client.UnsafeDisableDeepCopy)
}

// stored returns the object ref names as the API server has it, nil when it has none.
func (v *view) stored(ctx context.Context, ref objectRef) (client.Object, error) {
	return get(ctx, v.api, v.object(ref.gvk), ref.key)
}

func get(ctx context.Context, r client.Reader, obj client.Object, key types.NamespacedName, opts ...client.GetOption) (client.Object, error) {
	err := r.Get(ctx, key, obj, opts...)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return obj, nil
}
