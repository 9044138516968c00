package steps

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// call is what a test step returns.
type call struct {
	after time.Duration
	done  bool
	err   error
}

func TestPipeline(t *testing.T) {
	boom := errors.New("boom")
	tests := map[string]struct {
		steps   []call
		ran     int
		after   time.Duration
		wantErr error
	}{
		"no steps": {ran: 0},
		"all done": {steps: []call{{done: true}, {done: true}}, ran: 2},
		"the first step still waiting stops the rest":                  {steps: []call{{after: time.Second}, {done: true}}, ran: 1, after: time.Second},
		"a step waiting for an event stops the rest without a requeue": {steps: []call{{done: true}, {}, {done: true}}, ran: 2},
		"a failure stops the rest":                                     {steps: []call{{err: boom}, {done: true}}, ran: 1, wantErr: boom},
		"a failure keeps the requeue of a step before it":              {steps: []call{{done: true, after: time.Minute}, {err: boom}}, ran: 2, after: time.Minute, wantErr: boom},
		"a done step's requeue survives a later wait":                  {steps: []call{{done: true, after: time.Minute}, {after: time.Hour}}, ran: 2, after: time.Minute},
		"the soonest requeue of the steps that ran wins":               {steps: []call{{done: true, after: time.Hour}, {done: true, after: time.Second}, {done: true}}, ran: 3, after: time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ran []int
			var list []Step[*[]int]
			for i, c := range tc.steps {
				list = append(list, func(_ context.Context, s *[]int) (ctrl.Result, bool, error) {
					*s = append(*s, i)
					return ctrl.Result{RequeueAfter: c.after}, c.done, c.err
				})
			}
			res, err := Pipeline(context.Background(), &ran, list...)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if want := seq(tc.ran); !slices.Equal(ran, want) {
				t.Errorf("ran steps %v, want %v", ran, want)
			}
			if res.RequeueAfter != tc.after {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.after)
			}
		})
	}
}

// seq is 0..n-1: the steps a pipeline runs when the n-th (1-based) stops it.
func seq(n int) []int {
	var out []int
	for i := range n {
		out = append(out, i)
	}
	return out
}

// part is what a test part returns.
type part struct {
	after time.Duration
	err   error
}

func TestAll(t *testing.T) {
	boom, bang := errors.New("boom"), errors.New("bang")
	bad := reconcile.TerminalError(errors.New("bad spec"))
	tests := map[string]struct {
		parts    []part
		after    time.Duration
		wantErrs []error // each must be in the error returned
		notErrs  []error // none may be
	}{
		"no parts":                      {},
		"the soonest requeue wins":      {parts: []part{{after: time.Hour}, {}, {after: time.Second}}, after: time.Second},
		"a failure stops no other part": {parts: []part{{err: boom}, {after: time.Second}, {err: bang}}, wantErrs: []error{boom, bang}},
		"a transient failure hides a terminal one, so it is retried": {
			parts: []part{{err: bad}, {err: boom}}, wantErrs: []error{boom}, notErrs: []error{bad}},
		"terminal failures alone are returned": {parts: []part{{err: bad}, {after: time.Second}}, wantErrs: []error{bad}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ran []int
			var list []Part[*[]int]
			for i, p := range tc.parts {
				list = append(list, func(_ context.Context, s *[]int) (ctrl.Result, error) {
					*s = append(*s, i)
					return ctrl.Result{RequeueAfter: p.after}, p.err
				})
			}
			res, err := All(context.Background(), &ran, list...)
			if want := seq(len(tc.parts)); !slices.Equal(ran, want) {
				t.Errorf("ran parts %v, want every one: %v", ran, want)
			}
			if len(tc.wantErrs) == 0 && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			for _, want := range tc.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not hold %v", err, want)
				}
			}
			for _, not := range tc.notErrs {
				if errors.Is(err, not) {
					t.Errorf("error %v holds %v", err, not)
				}
			}
			if res.RequeueAfter != tc.after {
				t.Errorf("RequeueAfter %s, want %s", res.RequeueAfter, tc.after)
			}
		})
	}
}

func TestDone(t *testing.T) {
	boom := errors.New("boom")
	var ran []int
	ok := Done(func(_ context.Context, s *[]int) (ctrl.Result, error) {
		*s = append(*s, 0)
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	})
	failing := Done(func(_ context.Context, s *[]int) (ctrl.Result, error) {
		*s = append(*s, 1)
		return ctrl.Result{}, boom
	})
	never := Done(func(_ context.Context, s *[]int) (ctrl.Result, error) {
		*s = append(*s, 2)
		return ctrl.Result{}, nil
	})
	res, err := Pipeline(context.Background(), &ran, ok, failing, never)
	if !errors.Is(err, boom) || !slices.Equal(ran, []int{0, 1}) || res.RequeueAfter != time.Minute {
		t.Errorf("ran %v, got (%+v, %v): want a part that did not fail to be done, a failing one to stop the pipeline", ran, res, err)
	}
}

func TestSoonest(t *testing.T) {
	tests := map[string]struct {
		in   []time.Duration
		want time.Duration
	}{
		"nothing":                     {want: 0},
		"none asked":                  {in: []time.Duration{0, 0}, want: 0},
		"one asked":                   {in: []time.Duration{0, time.Second}, want: time.Second},
		"the smallest wins":           {in: []time.Duration{time.Hour, time.Second, time.Minute}, want: time.Second},
		"a negative duration is none": {in: []time.Duration{-time.Second, time.Minute}, want: time.Minute},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var results []ctrl.Result
			for _, d := range tc.in {
				results = append(results, ctrl.Result{RequeueAfter: d})
			}
			if got := Soonest(results...).RequeueAfter; got != tc.want {
				t.Errorf("Soonest = %s, want %s", got, tc.want)
			}
		})
	}
}
