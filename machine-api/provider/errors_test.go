package provider

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestErrorKinds(t *testing.T) {
	tests := map[string]struct {
		err         error
		invalid     bool
		requeue     bool
		requeueWait time.Duration
	}{
		"invalid configuration":         {err: InvalidConfiguration("instanceType %q is not offered", "huge"), invalid: true},
		"wrapped invalid configuration": {err: fmt.Errorf("creating: %w", InvalidConfiguration("no image")), invalid: true},
		"requeue after":                 {err: RequeueAfter(30*time.Second, "quota exhausted"), requeue: true, requeueWait: 30 * time.Second},
		"wrapped requeue after":         {err: fmt.Errorf("x: %w", RequeueAfter(time.Second, "busy")), requeue: true, requeueWait: time.Second},
		"transient":                     {err: errors.New("connection reset")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsInvalidConfiguration(tc.err); got != tc.invalid {
				t.Errorf("IsInvalidConfiguration = %v, want %v", got, tc.invalid)
			}
			r, ok := AsRequeueAfter(tc.err)
			if ok != tc.requeue {
				t.Fatalf("AsRequeueAfter ok = %v, want %v", ok, tc.requeue)
			}
			if ok && r.After != tc.requeueWait {
				t.Errorf("After = %s, want %s", r.After, tc.requeueWait)
			}
		})
	}
}

func TestInvalidConfigurationMessageSaysWhatToChange(t *testing.T) {
	err := InvalidConfiguration("providerSpec.value.instanceType %q is not offered; use one of small, large", "huge")
	want := `invalid machine configuration: providerSpec.value.instanceType "huge" is not offered; use one of small, large`
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}
