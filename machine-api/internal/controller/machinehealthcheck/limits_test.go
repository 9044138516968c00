package machinehealthcheck

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestParseRange protects the unhealthyRange syntax, "[min-max]".
func TestParseRange(t *testing.T) {
	tests := map[string]struct {
		in      string
		lo, hi  int
		wantErr bool
	}{
		"a range":                  {in: "[1-3]", lo: 1, hi: 3},
		"zero to zero":             {in: "[0-0]", lo: 0, hi: 0},
		"multi-digit bounds":       {in: "[10-200]", lo: 10, hi: 200},
		"min greater than max":     {in: "[3-1]", wantErr: true},
		"no brackets":              {in: "1-3", wantErr: true},
		"a missing bracket":        {in: "[1-3", wantErr: true},
		"a letter":                 {in: "[a-3]", wantErr: true},
		"a negative bound":         {in: "[-1-3]", wantErr: true},
		"spaces":                   {in: "[1 - 3]", wantErr: true},
		"a bound that overflows":   {in: "[1-99999999999999999999]", wantErr: true},
		"a single number":          {in: "[3]", wantErr: true},
		"an empty string is wrong": {in: "", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lo, hi, err := parseRange(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseRange(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && (lo != tc.lo || hi != tc.hi) {
				t.Errorf("parseRange(%q) = %d, %d, want %d, %d", tc.in, lo, hi, tc.lo, tc.hi)
			}
		})
	}
}

// TestLimits protects how maxUnhealthy, unhealthyRange and maxInFlight resolve against the
// number of targets: integers as given, percentages rounded down, the safe 40% default, and
// maxInFlight at least 1.
func TestLimits(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	tests := map[string]struct {
		spec      v1beta1.MachineHealthCheckSpec
		total     int
		unhealthy int
		allowed   bool
		headroom  int
		inFlight  int // in progress, for slots
		slots     int
		text      string
	}{
		"default 40% of 5 is 2: 2 unhealthy are remediated": {
			total: 5, unhealthy: 2, allowed: true, headroom: 0, slots: math.MaxInt, text: "maxUnhealthy 40% (2)",
		},
		"default 40% of 5 is 2: 3 unhealthy stop remediation": {
			total: 5, unhealthy: 3, allowed: false, slots: math.MaxInt,
		},
		"40% of 4 rounds down to 1": {
			spec: v1beta1.MachineHealthCheckSpec{MaxUnhealthy: pct("40%")}, total: 4, unhealthy: 2, allowed: false, slots: math.MaxInt,
			text: "maxUnhealthy 40% (1)",
		},
		"small pools: 40% of 2 rounds down to 0 but a percentage allows 1, and says so": {
			total: 2, unhealthy: 1, allowed: true, slots: math.MaxInt,
			text: "maxUnhealthy 40% (1: 40% of 2 targets rounds down to 0, and a percentage allows at least 1)",
		},
		"small pools: 40% of 1 allows the one": {
			total: 1, unhealthy: 1, allowed: true, slots: math.MaxInt,
		},
		"small pools: but never 2 of 2": {
			total: 2, unhealthy: 2, allowed: false, slots: math.MaxInt,
		},
		"small pools: 0% allows none": {
			spec: v1beta1.MachineHealthCheckSpec{MaxUnhealthy: pct("0%")}, total: 2, unhealthy: 1, allowed: false, slots: math.MaxInt,
			text: "maxUnhealthy 0% (0)",
		},
		"no unhealthy target is always within the limit": {
			total: 2, unhealthy: 0, allowed: true, headroom: 1, slots: math.MaxInt,
		},
		"no target at all": {
			total: 0, unhealthy: 0, allowed: true, slots: math.MaxInt, text: "maxUnhealthy 40% (0)",
		},
		"an integer is a count": {
			spec: v1beta1.MachineHealthCheckSpec{MaxUnhealthy: num(3)}, total: 100, unhealthy: 1, allowed: true, headroom: 2, slots: math.MaxInt,
			text: "maxUnhealthy 3",
		},
		"100% allows every target": {
			spec: v1beta1.MachineHealthCheckSpec{MaxUnhealthy: pct("100%")}, total: 7, unhealthy: 7, allowed: true, slots: math.MaxInt,
		},
		"0 allows none": {
			spec: v1beta1.MachineHealthCheckSpec{MaxUnhealthy: num(0)}, total: 7, unhealthy: 1, allowed: false, slots: math.MaxInt,
		},
		"a range allows counts within it": {
			spec: v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[1-3]"}, total: 10, unhealthy: 2, allowed: true, headroom: 1, slots: math.MaxInt,
			text: "unhealthyRange [1-3]",
		},
		"a range refuses counts above it": {
			spec: v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[1-3]"}, total: 10, unhealthy: 4, allowed: false, slots: math.MaxInt,
		},
		"a range refuses counts below it": {
			spec: v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[2-3]"}, total: 10, unhealthy: 1, allowed: false, slots: math.MaxInt,
		},
		"a range ignores the number of targets": {
			spec: v1beta1.MachineHealthCheckSpec{UnhealthyRange: "[0-5]"}, total: 5, unhealthy: 5, allowed: true, slots: math.MaxInt,
		},
		"maxInFlight 1 with one in progress leaves no slot": {
			spec: v1beta1.MachineHealthCheckSpec{MaxInFlight: num(1)}, total: 5, unhealthy: 1, allowed: true, headroom: 1, inFlight: 1, slots: 0,
		},
		"maxInFlight 50% of 5 is 2": {
			spec: v1beta1.MachineHealthCheckSpec{MaxInFlight: pct("50%")}, total: 5, unhealthy: 0, allowed: true, headroom: 2, inFlight: 1, slots: 1,
		},
		"maxInFlight 10% of 5 rounds down to 0 but is at least 1": {
			spec: v1beta1.MachineHealthCheckSpec{MaxInFlight: pct("10%")}, total: 5, unhealthy: 0, allowed: true, headroom: 2, slots: 1,
		},
		"more in flight than maxInFlight (lowered meanwhile) leaves no slot": {
			spec: v1beta1.MachineHealthCheckSpec{MaxInFlight: num(1)}, total: 5, unhealthy: 2, allowed: true, inFlight: 2, slots: 0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := limitsOf(&tc.spec, tc.total)
			if err != nil {
				t.Fatalf("limitsOf: %v", err)
			}
			if got := l.allows(tc.unhealthy); got != tc.allowed {
				t.Errorf("allows(%d) = %t, want %t", tc.unhealthy, got, tc.allowed)
			}
			if got := l.headroom(tc.unhealthy); got != tc.headroom {
				t.Errorf("headroom(%d) = %d, want %d", tc.unhealthy, got, tc.headroom)
			}
			if got := l.slots(tc.inFlight); got != tc.slots {
				t.Errorf("slots(%d) = %d, want %d", tc.inFlight, got, tc.slots)
			}
			if tc.text != "" && l.text != tc.text {
				t.Errorf("text = %q, want %q", l.text, tc.text)
			}
		})
	}
}

// TestLimitsInvalid protects the errors for limits the schema should have refused.
func TestLimitsInvalid(t *testing.T) {
	bad := intstr.FromString("many")
	tests := map[string]v1beta1.MachineHealthCheckSpec{
		"a malformed range":          {UnhealthyRange: "1..3"},
		"a maxUnhealthy not a %":     {MaxUnhealthy: &bad},
		"a maxInFlight not a %":      {MaxInFlight: &bad},
		"a range with min above max": {UnhealthyRange: "[5-1]"},
	}
	for name, spec := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := limitsOf(&spec, 5); err == nil {
				t.Error("limitsOf accepted it")
			}
		})
	}
}
