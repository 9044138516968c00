package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"machineapi.dev/nodelink/consistency"
	"machineapi.dev/nodelink/internal/test/envtest"
)

const ownerLabel = "test.machineapi.dev/owner"

// keeper keeps as many ConfigMaps labelled with an owner ConfigMap's name as the owner's
// data.replicas says, creating them under random names, as a MachineSet does its Machines. It
// counts from its cache alone: only the guard keeps it from counting the same gap twice.
type keeper struct {
	c       client.Client
	created atomic.Int32
}

func (k *keeper) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	owner := &corev1.ConfigMap{}
	if err := k.c.Get(ctx, req.NamespacedName, owner); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want, err := strconv.Atoi(owner.Data["replicas"])
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	children := &corev1.ConfigMapList{}
	if err := k.c.List(ctx, children, client.InNamespace(req.Namespace), client.MatchingLabels{ownerLabel: req.Name}); err != nil {
		return reconcile.Result{}, err
	}
	// All at once, as a set's slow-start batches do: the reconcile ends with the last answer, before
	// the cache has seen the last creates.
	errs := make(chan error, max(want-len(children.Items), 0))
	for range want - len(children.Items) {
		go func() {
			child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name + "-" + utilrand.String(5),
				Labels: map[string]string{ownerLabel: req.Name}}}
			err := k.c.Create(ctx, child)
			if err == nil {
				k.created.Add(1)
			}
			errs <- err
		}()
	}
	var failed error
	for range cap(errs) {
		failed = errors.Join(failed, <-errs)
	}
	return reconcile.Result{}, failed
}

func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "consistency-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

func children(ns, owner string) func() int {
	return func() int {
		list := &corev1.ConfigMapList{}
		Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ownerLabel: owner})).To(Succeed())
		return len(list.Items)
	}
}

var _ = Describe("A guarded controller", func() {
	It("never counts the same gap twice: a keeper of 40 ConfigMaps, woken by each one's event, creates exactly 40", func() {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
			Scheme:     envtest.Scheme(),
			Metrics:    metricsserver.Options{BindAddress: "0"},
			Controller: config.Controller{SkipNameValidation: new(true)},
		})
		Expect(err).NotTo(HaveOccurred())
		guard := consistency.New(consistency.Options{Controller: "keeper"})
		k := &keeper{c: consistency.NewClient(mgr.GetClient(), consistency.ClientOptions{Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader()})}
		hasReplicas := predicate.NewPredicateFuncs(func(o client.Object) bool { _, ok := o.(*corev1.ConfigMap).Data["replicas"]; return ok })
		Expect(ctrl.NewControllerManagedBy(mgr).Named("keeper").
			For(&corev1.ConfigMap{}, builder.WithPredicates(hasReplicas)).
			Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
				if owner := o.GetLabels()[ownerLabel]; owner != "" {
					return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: owner}}}
				}
				return nil
			})).
			Complete(guard.Reconciler(k))).To(Succeed())
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).Should(Receive(BeNil())) })

		ns := newNamespace()
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"}, Data: map[string]string{"replicas": "40"}})).To(Succeed())
		Eventually(children(ns, "pool")).Should(Equal(40))
		Consistently(children(ns, "pool")).Should(Equal(40), "no reconcile counted from a cache missing its own creates")
		Expect(k.created.Load()).To(BeEquivalentTo(40))
	})

	It("awaits an apply until the cache shows the API server's answer", func() {
		ns := newNamespace()
		c, r := guarded(ns, interceptor.Funcs{}, clocktesting.NewFakeClock(time.Now()))
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "applied"}})).To(Succeed())
		Eventually(func() error {
			return r.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: "applied"}, &corev1.ConfigMap{})
		}).Should(Succeed())
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "owner"}}
		_, err := r.guard.Reconciler(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{}, c.Apply(ctx, corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"k": "v"}), client.FieldOwner("test"))
		})).Reconcile(ctx, req)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.guard.Len()).To(Equal(1), "the apply is remembered")
		Eventually(func() (time.Duration, error) { return r.guard.Wait(ctx, req.NamespacedName) }).Should(BeZero())
		Expect(r.guard.Len()).To(BeZero())
		shown := &corev1.ConfigMap{}
		Expect(r.cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: "applied"}, shown)).To(Succeed())
		Expect(shown.Data).To(HaveKeyWithValue("k", "v"))
	})

	DescribeTable("awaits a create of unknown outcome until the API server says whether it was stored",
		func(stored bool) {
			ns := newNamespace()
			clock := clocktesting.NewFakeClock(time.Now())
			timeout := apierrors.NewServerTimeout(schema.GroupResource{Resource: "configmaps"}, "create", 1)
			c, r := guarded(ns, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if stored {
					if err := c.Create(ctx, obj, opts...); err != nil {
						return err
					}
				}
				return timeout
			}}, clock)
			key := types.NamespacedName{Namespace: ns, Name: "owner"}
			_, err := r.guard.Reconciler(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "maybe"}})
			})).Reconcile(ctx, reconcile.Request{NamespacedName: key})
			Expect(err).To(MatchError(timeout))

			wait := func() (time.Duration, error) { return r.guard.Wait(ctx, key) }
			if stored {
				// Stored: the cache lists it, which ends the wait before any check.
				Eventually(wait).Should(BeZero())
				return
			}
			Expect(wait()).To(Equal(consistency.DefaultUnsureCreateCheck), "nothing is listed: awaited until it is due to be checked")
			clock.Step(consistency.DefaultUnsureCreateCheck)
			Expect(wait()).To(BeZero(), "the API server says it does not exist: nothing to wait for")
		},
		Entry("stored, then the answer timed out", true),
		Entry("never stored", false),
	)
})

// guardedClient is a guarded client of ns with its own cache, and that guard.
type guardedClient struct {
	guard *consistency.Guard
	cache cache.Cache
}

func guarded(ns string, funcs interceptor.Funcs, clock *clocktesting.FakeClock) (client.Client, guardedClient) {
	GinkgoHelper()
	c, err := cache.New(env.Config, cache.Options{Scheme: envtest.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	Expect(err).NotTo(HaveOccurred())
	cctx, cancel := context.WithCancel(ctx)
	DeferCleanup(cancel)
	go func() { _ = c.Start(cctx) }()
	// The cache holds ConfigMaps from the start, as a controller watching them would.
	_, err = c.GetInformer(cctx, &corev1.ConfigMap{})
	Expect(err).NotTo(HaveOccurred())
	Expect(c.WaitForCacheSync(cctx)).To(BeTrue(), fmt.Sprintf("the cache of %s did not sync", ns))
	w, err := client.NewWithWatch(env.Config, client.Options{Scheme: envtest.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	g := consistency.New(consistency.Options{Controller: "test", Clock: clock})
	return consistency.NewClient(interceptor.NewClient(w, funcs), consistency.ClientOptions{Cache: c, APIReader: k8s}), guardedClient{guard: g, cache: c}
}
