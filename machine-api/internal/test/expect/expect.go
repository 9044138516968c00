// Package expect holds the assertions of the reconcile-once test level: a test builds a controller's
// Reconciler by hand (a client straight to the test API server, a fake clock), calls Reconcile
// once, and asserts what it wrote, then steps the clock and calls it again. No manager runs, so
// nothing happens between two calls but what the test does: step ordering and timeouts are tested
// without waiting. (Karpenter's ExpectObjectReconciled style.)
package expect

import (
	"context"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciled calls r.Reconcile once for obj, expects it to succeed, and returns its result. A
// reconciler behind a consistency guard (consistency.Reconciler, over a cache) is first waited
// for (Eventually) until its cache shows the earlier reconciles' writes, as the controller's
// queue would wait, so the call runs the controller rather than being deferred.
func Reconciled(ctx context.Context, r reconcile.Reconciler, obj client.Object) reconcile.Result {
	ginkgo.GinkgoHelper()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	if g, ok := r.(guarded); ok {
		gomega.Eventually(func() (time.Duration, error) { return g.Wait(ctx, req) }).Should(gomega.BeZero(),
			"the cache shows the writes of the earlier reconciles of %s", req.NamespacedName)
	}
	res, err := r.Reconcile(ctx, req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reconciling %s", req.NamespacedName)
	return res
}

// guarded is a reconciler behind a consistency guard (consistency.Reconciler).
type guarded interface {
	Wait(ctx context.Context, req reconcile.Request) (time.Duration, error)
}

// Fetched reads obj again from c, in place, and returns it.
func Fetched[T client.Object](ctx context.Context, c client.Client, obj T) T {
	ginkgo.GinkgoHelper()
	gomega.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed(), "reading %s", client.ObjectKeyFromObject(obj))
	return obj
}

// EventReasons lists the reasons of the events (events.k8s.io) regarding obj, as c reads them.
func EventReasons(ctx context.Context, c client.Reader, obj client.Object) []string {
	ginkgo.GinkgoHelper()
	list := &eventsv1.EventList{}
	gomega.Expect(c.List(ctx, list, client.InNamespace(obj.GetNamespace()))).To(gomega.Succeed(), "listing the events of %s", obj.GetName())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == obj.GetUID() {
			out = append(out, e.Reason)
		}
	}
	return out
}
