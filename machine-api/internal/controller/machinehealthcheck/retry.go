package machinehealthcheck

import (
	"fmt"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
)

// retryPolicy is spec.remediation, resolved: the limits on remediating one lineage (one slot of a
// MachineSet, see package lineage).
type retryPolicy struct {
	// tracked: spec.remediation is set, so the check reads the count of remediations the set
	// carries on each replacement. The other fields matter only then.
	tracked     bool
	maxRetries  int // < 0: no limit
	maxText     string
	retryPeriod time.Duration
	minHealthy  time.Duration
}

func retryPolicyOf(spec *v1beta1.MachineHealthCheckSpec) retryPolicy {
	r := spec.Remediation
	if r == nil {
		return retryPolicy{maxRetries: -1}
	}
	p := retryPolicy{tracked: true, maxRetries: -1, minHealthy: seconds(v1beta1.DefaultMinHealthyPeriodSeconds)}
	if r.MaxRetries != nil {
		p.maxRetries = int(*r.MaxRetries)
		p.maxText = fmt.Sprintf("maxRetries %d", p.maxRetries)
	}
	if r.RetryPeriodSeconds != nil {
		p.retryPeriod = seconds(*r.RetryPeriodSeconds)
	}
	if r.MinHealthyPeriodSeconds != nil {
		p.minHealthy = seconds(*r.MinHealthyPeriodSeconds)
	}
	return p
}

// limited reports whether the policy has a retry limit (and so the RetriesExhausted condition).
func (p retryPolicy) limited() bool { return p.maxRetries >= 0 }

// retryVerdict is whether an unhealthy Machine of some lineage may be remediated now.
type retryVerdict struct {
	exhausted bool          // the lineage spent its retries: never, until a person steps in
	wait      time.Duration // > 0: not before this much later (retryPeriodSeconds)
	why       string        // either, in words
}

// judge decides whether a Machine of lineage l may be remediated at now: not once the lineage
// was remediated maxRetries times, and not within retryPeriodSeconds of its last remediation.
func (p retryPolicy) judge(l lineage.Lineage, now time.Time) retryVerdict {
	switch {
	case !p.tracked:
		return retryVerdict{}
	case p.maxRetries == 0:
		return retryVerdict{exhausted: true, why: "maxRetries is 0: unhealthy Machines are reported, not remediated; the Machine is kept for inspection"}
	case p.limited() && l.Retries >= p.maxRetries:
		return retryVerdict{exhausted: true, why: fmt.Sprintf(
			"its lineage %s has been remediated %d times (%s), last at %s; the Machine is kept for inspection: "+
				"delete it by hand to start the slot over, once what makes its Machines fail is fixed",
			l.ID, l.Retries, p.maxText, stamp(l.LastRemediated))}
	}
	if l.Retries == 0 || l.LastRemediated.IsZero() || p.retryPeriod == 0 {
		return retryVerdict{}
	}
	next := l.LastRemediated.Add(p.retryPeriod)
	if !now.Before(next) {
		return retryVerdict{}
	}
	return retryVerdict{wait: next.Sub(now), why: fmt.Sprintf(
		"its lineage %s was last remediated at %s; not again before %s (retryPeriodSeconds %d)",
		l.ID, stamp(l.LastRemediated), stamp(next), int(p.retryPeriod/time.Second))}
}

// lineageOf returns the lineage whose count an unhealthy Machine m continues, its failure having
// begun at failedAt: the one its annotations record, unless the policy counts nothing or m had
// passed the check for minHealthyPeriodSeconds before it failed (lineage.Healthy): then its
// lineage starts over (reset), it counts as a first failure, and its replacement counts one.
func (p retryPolicy) lineageOf(m *v1beta1.Machine, failedAt time.Time) (l lineage.Lineage, reset bool) {
	l = lineage.Of(m)
	if !p.tracked {
		return l, true
	}
	if (l.Retries > 0 || !l.LastRemediated.IsZero()) && lineage.Healthy(m, failedAt, p.minHealthy) {
		return lineage.Lineage{ID: l.ID, Replaces: l.Replaces}, true
	}
	return l, false
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}
