package steps

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Step is one stage of a reconcile over scope S. It returns done=false when the steps after it
// must wait (for an event, or for res.RequeueAfter), and an error when it failed.
type Step[S any] func(ctx context.Context, s S) (res ctrl.Result, done bool, err error)

// Pipeline runs steps in order until one is not done or fails, and returns that step's error with
// the soonest requeue asked for by the steps that ran.
func Pipeline[S any](ctx context.Context, s S, steps ...Step[S]) (ctrl.Result, error) {
	var out ctrl.Result
	for _, st := range steps {
		res, done, err := st(ctx, s)
		out = Soonest(out, res)
		if err != nil || !done {
			return out, err
		}
	}
	return out, nil
}

// Part is an independent part of a reconcile over scope S: it runs whatever the parts before it
// returned, and returns an error when it failed.
type Part[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// All runs every part, in order, whatever each returned. Without an error it returns the soonest
// requeue the parts asked for. Otherwise it returns the errors joined, and no requeue (an error
// brings the reconcile back by itself): the transient ones, or, when every failure is terminal
// (reconcile.TerminalError), the terminal ones, so that one part's terminal failure never keeps
// another part's transient failure from being retried.
func All[S any](ctx context.Context, s S, parts ...Part[S]) (ctrl.Result, error) {
	var out ctrl.Result
	var transient, terminal []error
	for _, p := range parts {
		res, err := p(ctx, s)
		switch {
		case errors.Is(err, reconcile.TerminalError(nil)):
			terminal = append(terminal, err)
		case err != nil:
			transient = append(transient, err)
		default:
			out = Soonest(out, res)
		}
	}
	switch {
	case len(transient) > 0:
		return ctrl.Result{}, errors.Join(transient...)
	case len(terminal) > 0:
		return ctrl.Result{}, errors.Join(terminal...)
	}
	return out, nil
}

// Done makes a Part a Step of a Pipeline: it is done unless it failed.
func Done[S any](p Part[S]) Step[S] {
	return func(ctx context.Context, s S) (ctrl.Result, bool, error) {
		res, err := p(ctx, s)
		return res, err == nil, err
	}
}

// Soonest combines results: the smallest positive RequeueAfter wins; zero means none was asked for.
func Soonest(results ...ctrl.Result) ctrl.Result {
	var after time.Duration
	for _, r := range results {
		after = SoonestAfter(after, r.RequeueAfter)
	}
	return ctrl.Result{RequeueAfter: after}
}

// SoonestAfter returns the smaller positive duration of a and b; zero (or less) means none.
func SoonestAfter(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}
