package machinehealthcheck

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// limits are a health check's bounds on remediation, resolved against its number of targets.
type limits struct {
	// Either a range [min, max] (unhealthyRange) ...
	hasRange bool
	min, max int
	text     string // how the user wrote the bound: "maxUnhealthy 40% (2)" or "unhealthyRange [1-3]"
	// ... or max alone (maxUnhealthy, default 40%).

	// maxInFlight bounds the remediations in progress; math.MaxInt when unset.
	maxInFlight     int
	maxInFlightText string
}

var rangePattern = regexp.MustCompile(`^\[([0-9]+)-([0-9]+)\]$`)

// parseRange parses unhealthyRange, "[min-max]".
func parseRange(s string) (lo, hi int, err error) {
	parts := rangePattern.FindStringSubmatch(s)
	if parts == nil {
		return 0, 0, fmt.Errorf("unhealthyRange %q is not of the form [min-max]", s)
	}
	lo, errLo := strconv.Atoi(parts[1])
	hi, errHi := strconv.Atoi(parts[2])
	if errLo != nil || errHi != nil {
		return 0, 0, fmt.Errorf("unhealthyRange %q: bounds out of range", s)
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("unhealthyRange %q: min is greater than max", s)
	}
	return lo, hi, nil
}

// limitsOf resolves the spec's limits for total targets. Percentages round down: 40% of 5 is 2.
// A percentage other than 0% is at least 1 (maxUnhealthy and maxInFlight alike), so that a small
// group can still be remediated: 40% of 2 is 1, not 0.
func limitsOf(spec *v1beta1.MachineHealthCheckSpec, total int) (limits, error) {
	l := limits{maxInFlight: math.MaxInt}
	switch {
	case spec.UnhealthyRange != "":
		lo, hi, err := parseRange(spec.UnhealthyRange)
		if err != nil {
			return l, err
		}
		l.hasRange, l.min, l.max = true, lo, hi
		l.text = "unhealthyRange " + spec.UnhealthyRange
	default:
		v := v1beta1.DefaultMaxUnhealthy
		if spec.MaxUnhealthy != nil {
			v = *spec.MaxUnhealthy
		}
		n, err := scaled(v, total)
		if err != nil {
			return l, fmt.Errorf("maxUnhealthy: %w", err)
		}
		l.max = n
		l.text = "maxUnhealthy " + v.String()
		switch {
		case v.Type != intstr.String:
		case n == 0 && total > 0 && v.StrVal != "0%":
			// A small pool: 40% of 1 or 2 rounds down to 0, and a default check would never
			// remediate it. A percentage allows one at least; only 0 (or 0%) means none.
			l.max = 1
			l.text += fmt.Sprintf(" (1: %s of %d targets rounds down to 0, and a percentage allows at least 1)", v.StrVal, total)
		default:
			l.text += fmt.Sprintf(" (%d)", n)
		}
	}
	if v := spec.MaxInFlight; v != nil {
		n, err := scaled(*v, total)
		if err != nil {
			return l, fmt.Errorf("maxInFlight: %w", err)
		}
		l.maxInFlight = max(n, 1)
		l.maxInFlightText = "maxInFlight " + v.String()
		if v.Type == intstr.String {
			l.maxInFlightText += fmt.Sprintf(" (%d)", l.maxInFlight)
		}
	}
	return l, nil
}

// scaled is v as a number of targets: an integer as is, a percentage of total rounded down.
func scaled(v intstr.IntOrString, total int) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, false)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s is negative", v.String())
	}
	return n, nil
}

// allows reports whether remediation may go on with this many failing targets.
func (l limits) allows(failing int) bool {
	if l.hasRange && failing < l.min {
		return false
	}
	return failing <= l.max
}

// headroom is how many more targets may start failing before remediation stops.
func (l limits) headroom(failing int) int {
	if !l.allows(failing) {
		return 0
	}
	return l.max - failing
}

// slots is how many remediations may start with inFlight already in progress.
func (l limits) slots(inFlight int) int {
	return max(l.maxInFlight-inFlight, 0)
}

// denial says, for a human, why remediation is not allowed; counts is what is failing, in words
// (see evaluation.counts).
func (l limits) denial(counts string) (reason, message string) {
	if l.hasRange {
		return ReasonOutsideUnhealthyRange, fmt.Sprintf("%s, outside %s; remediating nothing until the count is back within it", counts, l.text)
	}
	return ReasonTooManyUnhealthy, fmt.Sprintf("%s, more than %s allows; remediating nothing until at most %d are", counts, l.text, l.max)
}

// stopped says why remediation is stopped without the counts, which change with every Node that
// fails or recovers: it is what each Machine's condition says, so that an outage does not rewrite
// every Machine's condition at each change of the counts.
func (l limits) stopped() string {
	if l.hasRange {
		return "the number of failing targets is outside " + l.text + " (see the health check's RemediationAllowed condition)"
	}
	return "more targets are failing than " + l.text + " allows (see the health check's RemediationAllowed condition)"
}
