// Package expect holds the assertions of the reconcile-once test level: a test builds a controller's
// Reconciler by hand (a client straight to the test API server, a fake clock), calls Reconcile
// once, and asserts what it wrote, then steps the clock and calls it again. No manager runs, so
// nothing happens between two calls but what the test does: step ordering and timeouts are tested
// without waiting. (Karpenter's ExpectObjectReconciled style.)
package expect

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciled calls r.Reconcile once for obj, expects it to succeed, and returns its result.
func Reconciled(ctx context.Context, r reconcile.Reconciler, obj client.Object) reconcile.Result {
	ginkgo.GinkgoHelper()
	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reconciling %s", client.ObjectKeyFromObject(obj))
	return res
}

// Fetched reads obj again from c, in place, and returns it.
func Fetched[T client.Object](ctx context.Context, c client.Client, obj T) T {
	ginkgo.GinkgoHelper()
	gomega.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(gomega.Succeed(), "reading %s", client.ObjectKeyFromObject(obj))
	return obj
}
