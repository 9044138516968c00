package consistency

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reconciler is a controller's reconciler behind its Guard (see Guard.Reconciler).
type Reconciler struct {
	guard *Guard
	next  reconcile.Reconciler
}

// Reconciler returns next guarded by g: a request whose cache does not show what its earlier
// reconciles wrote is requeued (after Guard.Wait's answer) without calling next; otherwise next
// runs with a context through which a client NewClient returned records its writes for the
// request.
func (g *Guard) Reconciler(next reconcile.Reconciler) *Reconciler {
	return &Reconciler{guard: g, next: next}
}

// Reconcile runs the controller's reconcile of req once its cache shows the earlier ones' writes.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o, err := r.guard.wait(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	logger := log.FromContext(ctx)
	if o.timedOut > 0 {
		logger.Info("the cache did not show this controller's writes in time (a lost watch event?); acting on what it shows",
			"writes", o.timedOut, "timeout", r.guard.opts.Timeout)
	}
	if o.after > 0 {
		requeuesTotal.WithLabelValues(r.guard.opts.Controller).Inc()
		logger.V(1).Info("the cache does not show this controller's earlier writes yet; requeueing",
			"awaiting", o.awaited, "object", o.first.String(), "after", o.after)
		return reconcile.Result{RequeueAfter: o.after}, nil
	}
	return r.next.Reconcile(withRequest(ctx, r.guard, req.NamespacedName), req)
}

// Wait is Guard.Wait for req: how long its reconcile would be deferred now. A test that calls
// Reconcile by hand waits for it to be 0 first, as the controller's queue would.
func (r *Reconciler) Wait(ctx context.Context, req reconcile.Request) (time.Duration, error) {
	return r.guard.Wait(ctx, req.NamespacedName)
}

// requestKey is the context key of the guarded reconcile a context belongs to.
type requestKey struct{}

// recorder is where a guarded client records a write made in that reconcile.
type recorder struct {
	guard *Guard
	key   types.NamespacedName
}

func withRequest(ctx context.Context, g *Guard, key types.NamespacedName) context.Context {
	return context.WithValue(ctx, requestKey{}, recorder{guard: g, key: key})
}
