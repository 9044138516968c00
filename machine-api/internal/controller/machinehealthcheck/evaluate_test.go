package machinehealthcheck

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestEvaluate protects the decisions of one pass: the short-circuit (counting unhealthy, suspect
// and in-flight targets, not those waiting for their Node), in-flight counting against maxInFlight,
// the retry limits of lineages, who is remediated (in name order) and why the others are not.
func TestEvaluate(t *testing.T) {
	one := intstr.FromInt32(1)
	two := intstr.FromInt32(2)
	ready := v1beta1.MachineHealthCheckSpec{
		UnhealthyConditions: []v1beta1.UnhealthyCondition{{Type: "Ready", Status: "False", TimeoutSeconds: 60}},
	}
	with := func(f func(*v1beta1.MachineHealthCheckSpec)) v1beta1.MachineHealthCheckSpec {
		s := *ready.DeepCopy()
		f(&s)
		return s
	}
	sick := notReadyFor(time.Hour)
	failing := notReadyFor(10 * time.Second) // within its 60s timeout: suspect
	limited := func(maxRetries, retryPeriod, minHealthy int32) func(*v1beta1.MachineHealthCheckSpec) {
		return func(s *v1beta1.MachineHealthCheckSpec) {
			s.MaxUnhealthy = ptrIntStr("100%")
			s.Remediation = &v1beta1.RemediationLimits{MaxRetries: &maxRetries, RetryPeriodSeconds: &retryPeriod, MinHealthyPeriodSeconds: &minHealthy}
		}
	}
	tests := map[string]struct {
		spec     v1beta1.MachineHealthCheckSpec
		external bool
		targets  []target
		// want
		remediated          []string
		cleanedUp           []string
		reset               []string          // remediated Machines whose lineage starts over (with spec.remediation)
		blocked             map[string]string // name → HealthCheckSucceeded reason
		healthy, unhealthy  int
		suspect             int
		inFlight            int
		exhausted           []string
		allowed             bool
		remediationsAllowed int32
		requeueAfter        time.Duration
	}{
		"3 of 5 unhealthy with the 40% default: nothing is remediated": {
			spec: ready,
			targets: []target{healthyTarget("a", sick), healthyTarget("b", sick), healthyTarget("c", sick),
				healthyTarget("d"), healthyTarget("e")},
			blocked: map[string]string{"a": ReasonRemediationNotAllowed, "b": ReasonRemediationNotAllowed, "c": ReasonRemediationNotAllowed},
			healthy: 2, unhealthy: 3, allowed: false,
		},
		"2 of 5 unhealthy with the 40% default: both are remediated": {
			spec:       ready,
			targets:    []target{healthyTarget("a", sick), healthyTarget("b", sick), healthyTarget("c"), healthyTarget("d"), healthyTarget("e")},
			remediated: []string{"a", "b"},
			healthy:    3, unhealthy: 2, allowed: true,
		},
		"Machines in flight count against maxUnhealthy: 2 being replaced and 1 more unhealthy stop remediation": {
			spec: ready,
			targets: []target{healthyTarget("a", sick, remediatedByUs), healthyTarget("b", sick, replacedByItsSet),
				healthyTarget("c", sick), healthyTarget("d"), healthyTarget("e")},
			blocked: map[string]string{"c": ReasonRemediationNotAllowed},
			healthy: 2, unhealthy: 3, inFlight: 2, allowed: false,
		},
		"Machines deleted by someone else count neither way": {
			spec: ready,
			targets: []target{healthyTarget("a", sick, deleting), healthyTarget("b", sick, deleting), healthyTarget("c", sick),
				healthyTarget("d"), healthyTarget("e")},
			remediated: []string{"c"},
			healthy:    2, unhealthy: 1, allowed: true, remediationsAllowed: 1,
		},
		"maxInFlight 1: only the first by name starts": {
			spec:       with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxInFlight = &one; s.MaxUnhealthy = ptrIntStr("100%") }),
			targets:    []target{healthyTarget("c", sick), healthyTarget("a", sick), healthyTarget("b", sick)},
			remediated: []string{"a"},
			blocked:    map[string]string{"b": ReasonWaitingForRemediation, "c": ReasonWaitingForRemediation},
			unhealthy:  3, allowed: true,
		},
		"maxInFlight 1 with a deletion in progress: none starts": {
			spec:      with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxInFlight = &one; s.MaxUnhealthy = ptrIntStr("100%") }),
			targets:   []target{healthyTarget("a", sick, remediatedByUs), healthyTarget("b", sick)},
			blocked:   map[string]string{"b": ReasonWaitingForRemediation},
			unhealthy: 2, inFlight: 1, allowed: true,
		},
		"maxInFlight 2 with a live external request: one more starts": {
			spec:       with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxInFlight = &two; s.MaxUnhealthy = ptrIntStr("100%") }),
			external:   true,
			targets:    []target{healthyTarget("a", sick, withRequest), healthyTarget("b", sick), healthyTarget("c", sick)},
			remediated: []string{"b"},
			blocked:    map[string]string{"c": ReasonWaitingForRemediation},
			unhealthy:  3, inFlight: 1, allowed: true,
		},
		"default remediation skips Machines no MachineSet owns, without using a slot": {
			spec: with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxInFlight = &one; s.MaxUnhealthy = ptrIntStr("100%") }),
			targets: []target{healthyTarget("a", sick, unowned), healthyTarget("b", sick, ownedBy("apps/v1", "ReplicaSet")),
				healthyTarget("c", sick, ownedBy("other.example.com/v1", "MachineSet")), healthyTarget("d", sick)},
			remediated: []string{"d"},
			blocked: map[string]string{"a": ReasonNotOwnedByMachineSet, "b": ReasonNotOwnedByMachineSet,
				"c": ReasonNotOwnedByMachineSet},
			unhealthy: 4, allowed: true,
		},
		"external remediation needs no MachineSet": {
			spec: with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("100%") }), external: true,
			targets:    []target{healthyTarget("a", sick, unowned)},
			remediated: []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"a healthy Machine with a request has it cleaned up": {
			spec: ready, external: true,
			targets:   []target{healthyTarget("a", withRequest), healthyTarget("b")},
			cleanedUp: []string{"a"},
			healthy:   2, allowed: true, remediationsAllowed: 1,
		},
		"a paused Machine is counted but not remediated": {
			spec:      with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("100%") }),
			targets:   []target{healthyTarget("a", sick, annotated(v1beta1.PausedAnnotation))},
			blocked:   map[string]string{"a": v1beta1.PausedReason},
			unhealthy: 1, allowed: true,
		},
		"unhealthyRange [1-2]: 2 are remediated": {
			spec:       with(func(s *v1beta1.MachineHealthCheckSpec) { s.UnhealthyRange = "[1-2]" }),
			targets:    []target{healthyTarget("a", sick), healthyTarget("b", sick)},
			remediated: []string{"a", "b"},
			unhealthy:  2, allowed: true,
		},
		"unhealthyRange [1-2]: 3 are not": {
			spec:      with(func(s *v1beta1.MachineHealthCheckSpec) { s.UnhealthyRange = "[1-2]" }),
			targets:   []target{healthyTarget("a", sick), healthyTarget("b", sick), healthyTarget("c", sick)},
			blocked:   map[string]string{"a": ReasonRemediationNotAllowed, "b": ReasonRemediationNotAllowed, "c": ReasonRemediationNotAllowed},
			unhealthy: 3, allowed: false,
		},
		"the requeue is the soonest pending timeout of any target": {
			spec: with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("100%") }),
			targets: []target{healthyTarget("a", notReadyFor(50*time.Second)), healthyTarget("b", notReadyFor(10*time.Second)),
				healthyTarget("c", noNodeProvisionedAgo(595*time.Second)), healthyTarget("d")},
			healthy: 1, suspect: 2, allowed: true, remediationsAllowed: 2, requeueAfter: 5 * time.Second,
		},
		"a correlated outage, 6 of 10 failing (1 unhealthy, 5 within their timeout): nothing is remediated": {
			spec: ready,
			targets: []target{healthyTarget("a", sick), healthyTarget("b", failing), healthyTarget("c", failing), healthyTarget("d", failing),
				healthyTarget("e", failing), healthyTarget("f", failing), healthyTarget("g"), healthyTarget("h"), healthyTarget("i"), healthyTarget("j")},
			blocked: map[string]string{"a": ReasonRemediationNotAllowed},
			healthy: 4, unhealthy: 1, suspect: 5, allowed: false, requeueAfter: 50 * time.Second,
		},
		"Nodes failing one by one: 1 timed out and 3 within their timeout are 4 of 10, within 40%: the timed-out one is remediated": {
			spec: ready,
			targets: []target{healthyTarget("a", sick), healthyTarget("b", failing), healthyTarget("c", failing), healthyTarget("d", failing),
				healthyTarget("e"), healthyTarget("f"), healthyTarget("g"), healthyTarget("h"), healthyTarget("i"), healthyTarget("j")},
			remediated: []string{"a"},
			healthy:    6, unhealthy: 1, suspect: 3, allowed: true, requeueAfter: 50 * time.Second,
		},
		"a suspect Machine is never remediated, even well within the limits": {
			spec:    with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("100%") }),
			targets: []target{healthyTarget("a", failing)},
			suspect: 1, allowed: true, remediationsAllowed: 0, requeueAfter: 50 * time.Second,
		},
		"a scale-up of more than 40%: Machines waiting for their Node do not count, the unhealthy one is remediated": {
			spec: ready,
			targets: []target{healthyTarget("a", sick), healthyTarget("b", noNodeProvisionedAgo(time.Second)), healthyTarget("c", noNodeProvisionedAgo(time.Second)),
				healthyTarget("d", noNodeProvisionedAgo(time.Second)), healthyTarget("e", noNodeProvisionedAgo(time.Second)),
				healthyTarget("f", noNodeProvisionedAgo(time.Second)), healthyTarget("g", noNodeProvisionedAgo(time.Second)),
				healthyTarget("h"), healthyTarget("i"), healthyTarget("j")},
			remediated: []string{"a"},
			healthy:    3, unhealthy: 1, allowed: true, remediationsAllowed: 3, requeueAfter: 599 * time.Second,
		},
		"Machines deleted by someone else are not suspect": {
			spec: ready,
			targets: []target{healthyTarget("a", failing, deleting), healthyTarget("b", failing, deleting), healthyTarget("c", failing, deleting),
				healthyTarget("d", sick), healthyTarget("e")},
			remediated: []string{"d"},
			healthy:    1, unhealthy: 1, allowed: true, remediationsAllowed: 1,
		},
		"lineages: a Machine whose lineage was remediated fewer than maxRetries times is remediated": {
			spec:       with(limited(2, 0, 600)),
			targets:    []target{healthyTarget("a", sick, inLineage("x", 1, time.Hour))},
			remediated: []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"lineages: one whose lineage spent maxRetries is kept for inspection, and named": {
			spec:       with(limited(2, 0, 600)),
			targets:    []target{healthyTarget("a", sick, inLineage("x", 2, time.Hour)), healthyTarget("b", sick)},
			remediated: []string{"b"},
			blocked:    map[string]string{"a": ReasonRetriesExhausted},
			exhausted:  []string{"a"},
			unhealthy:  2, allowed: true, remediationsAllowed: 0,
		},
		"lineages: maxRetries 0 reports every unhealthy Machine and remediates none": {
			spec:      with(limited(0, 0, 600)),
			targets:   []target{healthyTarget("a", sick), healthyTarget("b")},
			blocked:   map[string]string{"a": ReasonRetriesExhausted},
			exhausted: []string{"a"},
			healthy:   1, unhealthy: 1, allowed: true, remediationsAllowed: 1,
		},
		"lineages: a replacement failing within retryPeriodSeconds of the last remediation waits": {
			spec:      with(limited(5, 60, 600)),
			targets:   []target{healthyTarget("a", sick, inLineage("x", 1, 20*time.Second))},
			blocked:   map[string]string{"a": ReasonWaitingForRetryPeriod},
			unhealthy: 1, allowed: true, requeueAfter: 40 * time.Second,
		},
		"lineages: a replacement that failed after passing the check for minHealthyPeriodSeconds starts its lineage over": {
			spec:       with(limited(2, 0, 600)),
			targets:    []target{healthyTarget("a", sick, inLineage("x", 2, 3*time.Hour), linkedSince(2*time.Hour))},
			remediated: []string{"a"},
			reset:      []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"lineages: a replacement that failed sooner after its Node was linked continues its lineage": {
			spec:      with(limited(2, 0, 600)),
			targets:   []target{healthyTarget("a", sick, inLineage("x", 2, 3*time.Hour), linkedSince(65*time.Minute))},
			blocked:   map[string]string{"a": ReasonRetriesExhausted},
			exhausted: []string{"a"},
			unhealthy: 1, allowed: true,
		},
		"lineages: a replacement that never got a Node continues its lineage": {
			spec:       with(limited(3, 0, 600)),
			targets:    []target{healthyTarget("a", inLineage("x", 1, 3*time.Hour), noNodeProvisionedAgo(2*time.Hour))},
			remediated: []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"a Machine whose set was asked to replace it but that no MachineSet owns any more is judged again": {
			spec:      with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("100%") }),
			targets:   []target{healthyTarget("a", sick, remediatedByUs, unowned)},
			blocked:   map[string]string{"a": ReasonNotOwnedByMachineSet},
			unhealthy: 1, allowed: true, remediationsAllowed: 0,
		},
		"small pools: the 40% default remediates the unhealthy Machine of a pool of one": {
			spec:       ready,
			targets:    []target{healthyTarget("a", noNodeProvisionedAgo(time.Hour))},
			remediated: []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"small pools: one of two, but not two of two": {
			spec:      ready,
			targets:   []target{healthyTarget("a", sick), healthyTarget("b", sick)},
			blocked:   map[string]string{"a": ReasonRemediationNotAllowed, "b": ReasonRemediationNotAllowed},
			unhealthy: 2, allowed: false,
		},
		"small pools: maxUnhealthy 0 remediates nothing": {
			spec:      with(func(s *v1beta1.MachineHealthCheckSpec) { s.MaxUnhealthy = ptrIntStr("0") }),
			targets:   []target{healthyTarget("a", sick)},
			blocked:   map[string]string{"a": ReasonRemediationNotAllowed},
			unhealthy: 1, allowed: false,
		},
		"external remediation has no lineages": {
			spec: with(limited(0, 0, 600)), external: true,
			targets:    []target{healthyTarget("a", sick)},
			remediated: []string{"a"},
			unhealthy:  1, allowed: true,
		},
		"no targets: nothing to do, nothing to wait for": {
			spec: ready, allowed: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev, err := evaluate(&tc.spec, tc.targets, tc.external, time.Time{}, now)
			if err != nil {
				t.Fatalf("evaluate: %v", err)
			}
			var remediated, cleaned, reset []string
			blocked := map[string]string{}
			for _, o := range ev.outcomes {
				switch o.action {
				case actRemediate:
					remediated = append(remediated, o.target.machine.Name)
					if o.reset && tc.spec.Remediation != nil {
						reset = append(reset, o.target.machine.Name)
					}
				case actCleanup:
					cleaned = append(cleaned, o.target.machine.Name)
				}
				if o.blocked != "" {
					blocked[o.target.machine.Name] = o.blocked
				}
			}
			if !slices.Equal(remediated, tc.remediated) {
				t.Errorf("remediated %v, want %v", remediated, tc.remediated)
			}
			if !slices.Equal(cleaned, tc.cleanedUp) {
				t.Errorf("cleaned up %v, want %v", cleaned, tc.cleanedUp)
			}
			if !slices.Equal(reset, tc.reset) {
				t.Errorf("lineages reset %v, want %v", reset, tc.reset)
			}
			if !slices.Equal(ev.exhausted, tc.exhausted) {
				t.Errorf("exhausted %v, want %v", ev.exhausted, tc.exhausted)
			}
			if tc.blocked == nil {
				tc.blocked = map[string]string{}
			}
			if !maps.Equal(blocked, tc.blocked) {
				t.Errorf("blocked %v, want %v", blocked, tc.blocked)
			}
			if ev.healthy != tc.healthy || ev.unhealthy != tc.unhealthy || ev.suspect != tc.suspect || ev.inFlight != tc.inFlight || ev.allowed != tc.allowed {
				t.Errorf("healthy %d unhealthy %d suspect %d inFlight %d allowed %t, want %d %d %d %d %t",
					ev.healthy, ev.unhealthy, ev.suspect, ev.inFlight, ev.allowed, tc.healthy, tc.unhealthy, tc.suspect, tc.inFlight, tc.allowed)
			}
			if got := ev.remediationsAllowed(); got != tc.remediationsAllowed {
				t.Errorf("remediationsAllowed = %d, want %d", got, tc.remediationsAllowed)
			}
			if ev.requeueAfter != tc.requeueAfter {
				t.Errorf("requeueAfter = %s, want %s", ev.requeueAfter, tc.requeueAfter)
			}
		})
	}
}

// TestBlock protects what an unusable remediation template does: remediations that would have
// started are blocked with its reason, and no longer count as started.
func TestBlock(t *testing.T) {
	spec := v1beta1.MachineHealthCheckSpec{MaxUnhealthy: ptrIntStr("100%")}
	ev, err := evaluate(&spec, []target{healthyTarget("a", nodeGone), healthyTarget("b")}, true, time.Time{}, now)
	if err != nil {
		t.Fatal(err)
	}
	ev.block(ReasonRemediationTemplateNotFound, "no template")
	o := ev.outcomes[0]
	if o.action != actNone || o.blocked != ReasonRemediationTemplateNotFound || ev.started != 0 {
		t.Errorf("after block: action %d blocked %q started %d", o.action, o.blocked, ev.started)
	}
}

func ptrIntStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}
