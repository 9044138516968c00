package machinehealthcheck

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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
	actRemediate        // delete the Machine (marking its lineage first when tracked), or create its external remediation request
	actCleanup          // healthy again: delete its external remediation request
	actReset            // healthy for minHealthyPeriodSeconds: remove its lineage's count
	actRelease          // remove a lineage finalizer no MachineSet will remove (see releaseReason)
)

// outcome is the verdict on one target and what to do about it.
type outcome struct {
	target  *target
	health  health
	action  action
	blocked string           // unhealthy but not remediated now: a HealthCheckSucceeded reason ...
	why     string           // ... and the reason in words; for a suspect, what remediation is meanwhile
	lineage *lineage.Lineage // read for the few Machines whose lineage matters (nil: none read)
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
	// requeueAfter is when the first timeout of a target expires (0: none pending).
	requeueAfter time.Duration
}

// failing is the number of targets counted against maxUnhealthy / unhealthyRange.
func (ev *evaluation) failing() int { return ev.unhealthy + ev.suspect }

// evaluate judges every target of the check at time now and decides which unhealthy ones are
// remediated: none when too many are failing (maxUnhealthy / unhealthyRange, counting the
// suspect ones), else as many as maxInFlight leaves room for, in name order, that the retry
// limits of their lineage allow. Deletion needs a MachineSet to own the Machine; external
// remediation (external true) does not, and has no lineages. The order of targets is changed
// (sorted by name).
func evaluate(spec *v1beta1.MachineHealthCheckSpec, targets []target, external bool, now time.Time) (*evaluation, error) {
	slices.SortFunc(targets, func(a, b target) int { return strings.Compare(a.machine.Name, b.machine.Name) })
	r := rulesOf(spec)
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
			} else {
				ev.resetIfDue(o, now)
			}
		case stateSuspect:
			if !ev.allowed {
				o.why = "meanwhile remediation is stopped: " + l.stopped()
			}
		case stateUnhealthy:
			slots = ev.decide(o, slots, external, now)
		}
		if o.action == actNone && releaseReason(o) != "" {
			o.action = actRelease
		}
	}
	return ev, nil
}

// decide chooses whether the unhealthy target of o is remediated now, or why not, given the
// remediation slots left (maxInFlight); it returns the slots left after it.
func (ev *evaluation) decide(o *outcome, slots int, external bool, now time.Time) int {
	m := o.target.machine
	if !external {
		l := lineage.Of(m)
		o.lineage = &l
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

// resetIfDue starts the lineage of a healthy Machine over once it has been healthy for
// minHealthyPeriodSeconds, and otherwise asks to come back then.
func (ev *evaluation) resetIfDue(o *outcome, now time.Time) {
	m := o.target.machine
	if !ev.retry.tracked || !m.DeletionTimestamp.IsZero() || !hasLineageCount(m) {
		return // the common case, decided without parsing anything
	}
	l := lineage.Of(m)
	o.lineage = &l
	due, left := ev.retry.resetDue(l, meta.FindStatusCondition(m.Status.Conditions, v1beta1.HealthCheckSucceededCondition), now)
	if due {
		o.action = actReset
		return
	}
	ev.requeueAfter = steps.SoonestAfter(ev.requeueAfter, left)
}

func hasLineageCount(m *v1beta1.Machine) bool {
	_, count := m.Annotations[v1beta1.LineageRetriesAnnotation]
	_, at := m.Annotations[v1beta1.LineageRemediatedAtAnnotation]
	return count || at
}

// releaseReason says why this controller removes the lineage finalizer from a target not being
// remediated now, or "" when it leaves it (to the MachineSet, or absent). The finalizer is the
// MachineSet's to remove, except where no set will: a Machine being deleted that no MachineSet
// controls any more (orphaned), and a Machine that is not being deleted at all (the delete that
// followed the mark failed, and the Machine was judged otherwise since).
func releaseReason(o *outcome) string {
	t := o.target
	m := t.machine
	switch {
	case !lineage.AwaitsHandOver(m), t.deleted:
		return ""
	case !m.DeletionTimestamp.IsZero() && machineSetOf(m) == "":
		return "no MachineSet controls it any more, so none will take over its lineage"
	case m.DeletionTimestamp.IsZero() && o.health.state != stateInFlight:
		return "it is not being deleted: the remediation that marked it did not happen"
	}
	return ""
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
