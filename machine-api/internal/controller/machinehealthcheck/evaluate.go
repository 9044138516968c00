package machinehealthcheck

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// action is what a reconcile does to one target.
type action uint8

const (
	actNone      action = iota
	actRemediate        // delete the Machine, or create its external remediation request
	actCleanup          // healthy again: delete its external remediation request
)

// outcome is the verdict on one target and what to do about it.
type outcome struct {
	target  *target
	health  health
	action  action
	blocked string // unhealthy but not remediated now: a HealthCheckSucceeded reason ...
	why     string // ... and the reason in words
}

// evaluation is one pass of a health check over its targets. It is computed by evaluate from
// cached objects alone, so it is cheap and table-testable.
type evaluation struct {
	outcomes []outcome // sorted by Machine name
	total    int       // targets
	healthy  int
	// unhealthy counts every target that fails a rule, those whose remediation is in flight
	// included: a Machine being replaced still counts against maxUnhealthy, so an outage that
	// takes Machines down a few at a time cannot delete them all a few at a time.
	unhealthy int
	inFlight  int // remediations in progress before this pass
	started   int // remediations this pass starts
	limits    limits
	allowed   bool // unhealthy is within maxUnhealthy / unhealthyRange
	// requeueAfter is when the first timeout of a target expires (0: none pending).
	requeueAfter time.Duration
}

// evaluate judges every target of the check at time now and decides which unhealthy ones are
// remediated: none when too many are unhealthy (maxUnhealthy / unhealthyRange), else as many as
// maxInFlight leaves room for, in name order. Deletion needs a MachineSet to own the Machine;
// external remediation (external true) does not. The order of targets is changed (sorted by name).
func evaluate(spec *v1beta1.MachineHealthCheckSpec, targets []target, external bool, now time.Time) (*evaluation, error) {
	slices.SortFunc(targets, func(a, b target) int { return strings.Compare(a.machine.Name, b.machine.Name) })
	r := rulesOf(spec)
	ev := &evaluation{outcomes: make([]outcome, len(targets)), total: len(targets)}
	for i := range targets {
		h := check(&targets[i], &r, now)
		ev.outcomes[i] = outcome{target: &targets[i], health: h}
		switch h.state {
		case stateHealthy:
			ev.healthy++
		case stateUnhealthy:
			ev.unhealthy++
		case stateInFlight:
			ev.unhealthy++
			ev.inFlight++
		}
		ev.requeueAfter = soonest(ev.requeueAfter, h.recheck)
	}
	l, err := limitsOf(spec, ev.total)
	if err != nil {
		return nil, err
	}
	ev.limits, ev.allowed = l, l.allows(ev.unhealthy)

	slots := l.slots(ev.inFlight)
	for i := range ev.outcomes {
		o := &ev.outcomes[i]
		m := o.target.machine
		switch {
		case o.health.state == stateHealthy && o.target.request:
			o.action = actCleanup
		case o.health.state != stateUnhealthy:
		case v1beta1.IsPaused(m.Annotations):
			o.blocked, o.why = v1beta1.PausedReason, "the Machine is paused"
		case !ev.allowed:
			_, denial := l.denial(ev.unhealthy, ev.total)
			o.blocked, o.why = ReasonRemediationNotAllowed, denial
		case !external && machineSetOf(m) == "":
			o.blocked, o.why = ReasonNotOwnedByMachineSet,
				"it is not owned by a MachineSet, which would replace it; remediate it manually (delete it) or set spec.remediationTemplate"
		case slots == 0:
			o.blocked, o.why = ReasonWaitingForRemediation,
				"waiting for a remediation in progress to finish ("+l.maxInFlightText+")"
		default:
			o.action = actRemediate
			slots--
			ev.started++
		}
	}
	return ev, nil
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
	n := min(ev.limits.headroom(ev.unhealthy), ev.limits.slots(ev.inFlight+ev.started))
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
