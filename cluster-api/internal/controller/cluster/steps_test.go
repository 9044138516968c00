package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The live path runs independent steps; how their results combine decides when a Cluster is
// looked at again.
func TestRunAll(t *testing.T) {
	after := func(d time.Duration) step {
		return func(context.Context, *scope) (ctrl.Result, error) { return ctrl.Result{RequeueAfter: d}, nil }
	}
	fail := func(err error) step {
		return func(context.Context, *scope) (ctrl.Result, error) { return ctrl.Result{}, err }
	}
	transient, terminal := errors.New("timeout"), reconcile.TerminalError(errors.New("bad spec"))
	cases := map[string]struct {
		steps        []step
		wantAfter    time.Duration
		wantErr      error
		wantTerminal bool
	}{
		"soonest requeue wins":                 {steps: []step{after(time.Minute), after(time.Second), after(0)}, wantAfter: time.Second},
		"an error wins over requeues":          {steps: []step{after(time.Second), fail(transient)}, wantErr: transient},
		"a transient error wins over terminal": {steps: []step{fail(terminal), fail(transient)}, wantErr: transient},
		"terminal alone stops retries":         {steps: []step{fail(terminal), after(time.Second)}, wantErr: terminal, wantTerminal: true},
		"every step runs even after a failure": {steps: []step{fail(transient), after(time.Second)}, wantErr: transient},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ran := 0
			var steps []step
			for _, st := range tc.steps {
				steps = append(steps, func(ctx context.Context, s *scope) (ctrl.Result, error) { ran++; return st(ctx, s) })
			}
			res, err := runAll(context.Background(), &scope{}, steps...)
			if ran != len(tc.steps) {
				t.Errorf("ran %d of %d steps", ran, len(tc.steps))
			}
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tc.wantTerminal {
				t.Errorf("terminal = %v, want %v", got, tc.wantTerminal)
			}
			if err == nil && res.RequeueAfter != tc.wantAfter {
				t.Errorf("requeue after %s, want %s", res.RequeueAfter, tc.wantAfter)
			}
		})
	}
}
