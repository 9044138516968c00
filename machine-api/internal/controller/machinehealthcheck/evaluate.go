package machinehealthcheck

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
	"machineapi.dev/machine-api/reconcile/steps"
)

// action is what a reconcile does to one target.
type action uint8

const (
	actNone      action = iota
	actRemediate        // ask its MachineSet to replace it (OwnerRemediated), or create its external remediation request
	actCleanup          // healthy again: delete its external remediation request
)

// outcome is the verdict on one target and what to do about it.
type outcome struct {
	target  *target
	health  health
	action  action
	blocked string           // unhealthy but not remediated now: a HealthCheckSucceeded reason ...
	why     string           // ... and the reason in words; for a suspect, what remediation is meanwhile
	lineage *lineage.Lineage // read for the few Machines whose lineage matters (nil: none read)
	reset   bool             // the Machine's failure starts its lineage over (see retryPolicy.lineageOf)
}

// lineageOf is the lineage read for o's Machine, the zero Lineage when none was.
func (o *outcome) lineageOf() lineage.Lineage {
	if o.lineage == nil {
		return lineage.Lineage{}
	}
	return *o.lineage
}

// evaluation is one pass of a health check over its targets. It is computed by evaluate from
// cached objects alone, so it is cheap and table-testable. Its counts are what a metrics
// collector would report about the check.
type evaluation struct {
	outcomes []outcome // sorted by Machine name
	total    int       // targets
	healthy  int
	// unhealthy counts the targets that failed a rule for its timeout, those whose remediation is
	// in flight included: a Machine being replaced still counts against maxUnhealthy.
	unhealthy int
	// suspect counts the targets that fail a condition rule whose timeout has not passed yet. They
	// count against maxUnhealthy too: a correlated outage takes Nodes down within seconds of each
	// other, and counting only the timed-out ones would remediate them one by one as each timeout
	// passes, never seeing more than a few at once.
	suspect  int
	inFlight int // remediations in progress before this pass
	started  int // remediations this pass starts
	// exhausted names the unhealthy Machines kept unremediated because their lineage spent
	// spec.remediation.maxRetries, sorted.
	exhausted []string
	limits    limits
	retry     retryPolicy
	allowed   bool // failing is within maxUnhealthy / unhealthyRange
	// resumedAt is when remediation resumed after a short-circuit, while a target's timeout still
	// counts from then (resumed of them); zero otherwise.
	resumedAt time.Time
	resumed   int
	// requeueAfter is when the first timeout of a target expires (0: none pending).
	requeueAfter time.Duration
}

// failing is the number of targets counted against maxUnhealthy / unhealthyRange.
func (ev *evaluation) failing() int { return ev.unhealthy + ev.suspect }

// evaluate judges every target of the check at time now and decides which unhealthy ones are
// remediated: none when too many are failing (maxUnhealthy / unhealthyRange, counting the
// suspect ones), else as many as maxInFlight leaves room for, in name order, that the retry
// limits of their lineage allow. Remediation by the owner needs a MachineSet to own the Machine;
// external remediation (external true) does not, and has no lineages. resumedAt, when set, is when
// remediation resumed after a short-circuit (see resumeOf): no timeout counts from before it. The
// order of targets is changed (sorted by name).
func evaluate(spec *v1beta1.MachineHealthCheckSpec, targets []target, external bool, resumedAt, now time.Time) (*evaluation, error) {
	slices.SortFunc(targets, func(a, b target) int { return strings.Compare(a.machine.Name, b.machine.Name) })
	r := rulesOf(spec)
	r.resumedAt = resumedAt
	// External remediation has no lineages, so no retry limit (nor RetriesExhausted condition).
	ev := &evaluation{outcomes: make([]outcome, len(targets)), total: len(targets), retry: retryPolicy{maxRetries: -1}}
	if !external {
		ev.retry = retryPolicyOf(spec)
	}
	for i := range targets {
		h := check(&targets[i], &r, now)
		ev.outcomes[i] = outcome{target: &targets[i], health: h}
		switch h.state {
		case stateHealthy:
			ev.healthy++
		case stateSuspect:
			ev.suspect++
		case stateUnhealthy:
			ev.unhealthy++
		case stateInFlight:
			ev.unhealthy++
			ev.inFlight++
		}
		ev.requeueAfter = steps.SoonestAfter(ev.requeueAfter, h.recheck)
	}
	l, err := limitsOf(spec, ev.total)
	if err != nil {
		return nil, err
	}
	ev.limits, ev.allowed = l, l.allows(ev.failing())

	slots := l.slots(ev.inFlight)
	for i := range ev.outcomes {
		o := &ev.outcomes[i]
		switch o.health.state {
		case stateHealthy:
			if o.target.request {
				o.action = actCleanup
			}
		case stateSuspect:
			if !ev.allowed {
				o.why = "meanwhile remediation is stopped: " + l.stopped()
			}
		case stateUnhealthy:
			slots = ev.decide(o, slots, external, now)
		}
	}
	return ev, nil
}

// decide chooses whether the unhealthy target of o is remediated now, or why not, given the
// remediation slots left (maxInFlight); it returns the slots left after it.
func (ev *evaluation) decide(o *outcome, slots int, external bool, now time.Time) int {
	m := o.target.machine
	if !external {
		l, reset := ev.retry.lineageOf(m, o.health.since)
		o.lineage, o.reset = &l, reset
	}
	verdict := ev.retry.judge(o.lineageOf(), now)
	if verdict.exhausted && machineSetOf(m) != "" {
		ev.exhausted = append(ev.exhausted, m.Name)
	}
	switch {
	case v1beta1.IsPaused(m.Annotations):
		o.blocked, o.why = v1beta1.PausedReason, "the Machine is paused"
	case !ev.allowed:
		o.blocked, o.why = ReasonRemediationNotAllowed, ev.limits.stopped()
	case !external && machineSetOf(m) == "":
		o.blocked, o.why = ReasonNotOwnedByMachineSet,
			"it is not owned by a MachineSet, which would replace it; remediate it manually (delete it) or set spec.remediationTemplate"
	case verdict.exhausted:
		o.blocked, o.why = ReasonRetriesExhausted, verdict.why
	case verdict.wait > 0:
		o.blocked, o.why = ReasonWaitingForRetryPeriod, verdict.why
		ev.requeueAfter = steps.SoonestAfter(ev.requeueAfter, verdict.wait)
	case slots == 0:
		o.blocked, o.why = ReasonWaitingForRemediation,
			"waiting for a remediation in progress to finish ("+ev.limits.maxInFlightText+")"
	default:
		o.action = actRemediate
		ev.started++
		return slots - 1
	}
	return slots
}

// block turns every remediation this pass would start into a blocked one.
func (ev *evaluation) block(reason, why string) {
	for i := range ev.outcomes {
		if o := &ev.outcomes[i]; o.action == actRemediate {
			o.action, o.blocked, o.why = actNone, reason, why
		}
	}
	ev.started = 0
}

// remediationsAllowed is how many more Machines may be remediated after this pass.
func (ev *evaluation) remediationsAllowed() int32 {
	if !ev.allowed {
		return 0
	}
	n := min(ev.limits.headroom(ev.failing()), ev.limits.slots(ev.inFlight+ev.started))
	return int32(min(n, 1<<31-1))
}

// machineSetOf returns the name of the MachineSet controlling m, "" if none.
func machineSetOf(m *v1beta1.Machine) string {
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "MachineSet" {
		return ""
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != v1beta1.GroupVersion.Group {
		return ""
	}
	return ref.Name
}

// resumeOf reads from the check's status whether remediation resumed after a short-circuit and
// when (RemediationAllowed True with ReasonResumed: its lastTransitionTime), or whether the check
// is short-circuited now (RemediationAllowed False because too many targets are failing). Either
// way the targets' timeouts must not count the outage: a Machine whose Node is still coming back
// when the count drops within the limits has been failing for longer than its timeout, but only
// because of the outage, and is remediated only if it still fails a full timeout after the
// check resumed.
func resumeOf(mhc *v1beta1.MachineHealthCheck) (resumedAt time.Time, shortCircuited bool) {
	c := meta.FindStatusCondition(mhc.Status.Conditions, v1beta1.RemediationAllowedCondition)
	switch {
	case c == nil:
		return time.Time{}, false
	case c.Status == metav1.ConditionTrue && c.Reason == ReasonResumed:
		return c.LastTransitionTime.Time, false
	case c.Status == metav1.ConditionFalse && (c.Reason == ReasonTooManyUnhealthy || c.Reason == ReasonOutsideUnhealthyRange):
		return time.Time{}, true
	}
	return time.Time{}, false
}

// noteResumed records when remediation resumed, while some target's timeout still counts from
// then: the RemediationAllowed condition says so (reason Resumed) until none does.
func (ev *evaluation) noteResumed(resumedAt time.Time) {
	if resumedAt.IsZero() || !ev.allowed {
		return
	}
	for i := range ev.outcomes {
		if ev.outcomes[i].health.resumed {
			ev.resumed++
		}
	}
	if ev.resumed > 0 {
		ev.resumedAt = resumedAt
	}
}
