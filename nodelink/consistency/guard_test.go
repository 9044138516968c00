package consistency

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// lagging is a cache that shows only what the test lets it show: a copy of the stored object,
// taken when the test calls show.
type lagging struct {
	store client.Client
	mu    sync.Mutex
	seen  map[types.NamespacedName]*corev1.ConfigMap
}

func (l *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cm, ok := l.seen[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	cm.DeepCopyInto(obj.(*corev1.ConfigMap))
	return nil
}

func (l *lagging) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// show makes the cache catch up with the object named name as stored (gone when it is not).
func (l *lagging) show(t *testing.T, name string) {
	t.Helper()
	key := types.NamespacedName{Namespace: "ns", Name: name}
	cm := &corev1.ConfigMap{}
	err := l.store.Get(context.Background(), key, cm)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		delete(l.seen, key)
	case err != nil:
		t.Fatal(err)
	default:
		l.seen[key] = cm
	}
}

// fixture is a guard, a guarded client writing to a fake API server, and a lagging cache.
type fixture struct {
	clock *clocktesting.FakeClock
	guard *Guard
	store client.WithWatch
	cache *lagging
	c     client.Client
}

func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{clock: clocktesting.NewFakeClock(t0)}
	f.store = fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&corev1.ConfigMap{}).Build()
	f.cache = &lagging{store: f.store, seen: map[types.NamespacedName]*corev1.ConfigMap{}}
	for _, o := range objs {
		f.cache.show(t, o.GetName())
	}
	f.guard = New(Options{Controller: "test", Clock: f.clock})
	f.c = NewClient(interceptor.NewClient(f.store, funcs), ClientOptions{Cache: f.cache, APIReader: f.store,
		Uncached: []client.Object{&corev1.Secret{}}})
	return f
}

var req = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "owner"}}

// reconcile runs do as the guarded reconcile of req, and returns what the guard answered.
func (f *fixture) reconcile(t *testing.T, do func(ctx context.Context, c client.Client) error) (reconcile.Result, bool) {
	t.Helper()
	ran := false
	res, err := f.guard.Reconciler(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
		ran = true
		return reconcile.Result{}, do(ctx, f.c)
	})).Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res, ran
}

func (f *fixture) wait(t *testing.T) time.Duration {
	t.Helper()
	d, err := f.guard.Wait(context.Background(), req.NamespacedName)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func cm(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// TestAwaitsEachKindOfWrite: the next reconcile of a request runs only once the cache shows what
// the last one created, updated and deleted; until then it is requeued after Recheck.
func TestAwaitsEachKindOfWrite(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, cm("old"), cm("kept"))
	_, ran := f.reconcile(t, func(ctx context.Context, c client.Client) error {
		kept := &corev1.ConfigMap{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "kept"}, kept); err != nil {
			return err
		}
		kept.Data = map[string]string{"k": "v"}
		return errors.Join(c.Create(ctx, cm("new")), c.Update(ctx, kept), c.Delete(ctx, cm("old")))
	})
	if !ran {
		t.Fatal("the first reconcile was deferred with nothing written")
	}
	for _, name := range []string{"new", "kept", "old"} {
		res, ran := f.reconcile(t, func(context.Context, client.Client) error { return nil })
		if ran || res.RequeueAfter != Recheck {
			t.Fatalf("before the cache shows %s: ran %t, requeued after %s; want deferred by %s", name, ran, res.RequeueAfter, Recheck)
		}
		f.cache.show(t, name)
	}
	if _, ran := f.reconcile(t, func(context.Context, client.Client) error { return nil }); !ran {
		t.Fatal("deferred although the cache shows every write")
	}
	if f.guard.Len() != 0 {
		t.Errorf("%d requests remembered after the cache showed everything", f.guard.Len())
	}
}

// TestTimeout: a write the cache never shows (a lost event) is awaited for Timeout after the
// request's last write, then the cache wins.
func TestTimeout(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	f.reconcile(t, func(ctx context.Context, c client.Client) error { return c.Create(ctx, cm("lost")) })
	f.clock.Step(DefaultTimeout - time.Second)
	if d := f.wait(t); d != Recheck {
		t.Fatalf("just before the timeout: wait %s, want %s", d, Recheck)
	}
	f.clock.Step(time.Second)
	if d := f.wait(t); d != 0 {
		t.Fatalf("at the timeout: wait %s, want none", d)
	}
	if f.guard.Len() != 0 {
		t.Errorf("%d requests remembered after the timeout", f.guard.Len())
	}
}

// TestUnsureCreates: a create that failed without saying whether it was stored is awaited (the
// controller creates nothing else for that need) until the cache lists the object or, once
// UnsureCreateCheck has passed, the API server says it does not exist. A refused create is not
// awaited at all.
func TestUnsureCreates(t *testing.T) {
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "create", 1)
	tests := map[string]struct {
		stored bool  // the API server stored the object before the error
		err    error // what the create returned
		// awaited: the reconcile after is deferred; then, once due to be checked:
		awaited, awaitedAfterCheck bool
	}{
		"stored, then the answer timed out": {stored: true, err: timeout, awaited: true, awaitedAfterCheck: true},
		"connection reset before it was stored": {err: &url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: syscall.ECONNRESET},
			awaited: true, awaitedAfterCheck: false},
		"refused: invalid": {err: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "maybe", nil)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if tc.stored {
					if err := c.Create(ctx, obj, opts...); err != nil {
						return err
					}
				}
				return tc.err
			}})
			f.reconcile(t, func(ctx context.Context, c client.Client) error {
				if err := c.Create(ctx, cm("maybe")); !errors.Is(err, tc.err) {
					t.Errorf("create returned %v, want %v", err, tc.err)
				}
				return nil
			})
			d := f.wait(t)
			if !tc.awaited {
				if d != 0 {
					t.Fatalf("a refused create is awaited (%s)", d)
				}
				return
			}
			if d != DefaultUnsureCreateCheck {
				t.Fatalf("right after the failed create: wait %s, want %s (when it is due to be checked)", d, DefaultUnsureCreateCheck)
			}
			f.clock.Step(DefaultUnsureCreateCheck)
			d = f.wait(t)
			if got := d > 0; got != tc.awaitedAfterCheck {
				t.Fatalf("once checked with the API server: wait %s, want awaited %t", d, tc.awaitedAfterCheck)
			}
			if tc.awaitedAfterCheck {
				f.cache.show(t, "maybe")
				if d := f.wait(t); d != 0 {
					t.Fatalf("the cache lists it: wait %s, want none", d)
				}
			}
		})
	}
}

// TestCreatedThenDeleted: an object created and deleted again (by someone else) before the cache
// ever listed it is awaited only until the API server is asked, UnsureCreateCheck after the create.
func TestCreatedThenDeleted(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{})
	f.reconcile(t, func(ctx context.Context, c client.Client) error { return c.Create(ctx, cm("brief")) })
	if err := f.store.Delete(context.Background(), cm("brief")); err != nil {
		t.Fatal(err)
	}
	if d := f.wait(t); d != Recheck {
		t.Fatalf("before the check: wait %s, want %s", d, Recheck)
	}
	f.clock.Step(DefaultUnsureCreateCheck)
	if d := f.wait(t); d != 0 {
		t.Fatalf("the API server has no such object: wait %s, want none", d)
	}
}

// TestWhatIsRecorded: only writes the controllers would read back from the cache are awaited.
func TestWhatIsRecorded(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kept"}}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	u.SetNamespace("ns")
	u.SetName("unstructured")
	tests := map[string]struct {
		write func(ctx context.Context, c client.Client) error
		want  bool
	}{
		"a typed object":           {write: func(ctx context.Context, c client.Client) error { return c.Create(ctx, cm("typed")) }, want: true},
		"a kind read from the API": {write: func(ctx context.Context, c client.Client) error { return c.Create(ctx, secret.DeepCopy()) }},
		"metadata only":            {write: func(ctx context.Context, c client.Client) error { return c.Delete(ctx, meta.DeepCopy()) }},
		"an unstructured object":   {write: func(ctx context.Context, c client.Client) error { return c.Create(ctx, u.DeepCopy()) }},
		"a dry run":                {write: func(ctx context.Context, c client.Client) error { return c.Create(ctx, cm("dry"), client.DryRunAll) }},
		"a status write":           {write: func(ctx context.Context, c client.Client) error { return c.Status().Update(ctx, cm("kept")) }, want: true},
		"a delete of an object gone": {write: func(ctx context.Context, c client.Client) error {
			return client.IgnoreNotFound(c.Delete(ctx, cm("never")))
		}, want: true},
		"a refused update": {write: func(ctx context.Context, c client.Client) error {
			return client.IgnoreNotFound(c.Update(ctx, cm("never")))
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{}, cm("kept"))
			f.reconcile(t, func(ctx context.Context, c client.Client) error { return tc.write(ctx, c) })
			if got := f.guard.Len() > 0; got != tc.want {
				t.Errorf("recorded %t, want %t", got, tc.want)
			}
		})
	}
	t.Run("a write outside a guarded reconcile", func(t *testing.T) {
		f := newFixture(t, interceptor.Funcs{})
		if err := f.c.Create(context.Background(), cm("outside")); err != nil {
			t.Fatal(err)
		}
		if f.guard.Len() != 0 {
			t.Error("recorded")
		}
	})
	t.Run("unstructured, when the cache holds unstructured objects", func(t *testing.T) {
		f := newFixture(t, interceptor.Funcs{})
		f.c = NewClient(f.c, ClientOptions{Unstructured: true})
		f.reconcile(t, func(ctx context.Context, c client.Client) error { return c.Create(ctx, u.DeepCopy()) })
		if f.guard.Len() != 1 {
			t.Error("not recorded")
		}
	})
}

func TestRefused(t *testing.T) {
	gr := schema.GroupResource{Group: "machine.machineapi.dev", Resource: "machines"}
	tests := map[string]struct {
		err  error
		want bool
	}{
		"invalid":                 {apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Machine"}, "m", nil), true},
		"forbidden":               {apierrors.NewForbidden(gr, "m", errors.New("quota")), true},
		"already exists":          {apierrors.NewAlreadyExists(gr, "m"), true},
		"too many requests":       {apierrors.NewTooManyRequests("slow down", 1), true},
		"connection reset":        {&url.Error{Op: "Post", URL: "https://127.0.0.1:6443", Err: syscall.ECONNRESET}, false},
		"server timeout":          {apierrors.NewServerTimeout(gr, "create", 1), false},
		"timeout":                 {apierrors.NewTimeoutError("took too long", 1), false},
		"internal error":          {apierrors.NewInternalError(errors.New("etcd")), false},
		"service unavailable 503": {apierrors.NewServiceUnavailable("restarting"), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Refused(tc.err); got != tc.want {
				t.Errorf("Refused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
