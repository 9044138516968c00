package machinehealthcheck

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// TestEvaluate protects the decisions of one pass: the short-circuit, in-flight counting against
// maxUnhealthy and maxInFlight, who is remediated (in name order) and why the others are not.
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
	tests := map[string]struct {
		spec     v1beta1.MachineHealthCheckSpec
		external bool
		targets  []target
		// want
		remediated          []string
		cleanedUp           []string
		blocked             map[string]string // name → HealthCheckSucceeded reason
		healthy, unhealthy  int
		inFlight            int
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
			targets: []target{healthyTarget("a", sick, remediatedByUs), healthyTarget("b", sick, remediatedByUs),
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
			healthy:   2, allowed: true,
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
			spec: ready,
			targets: []target{healthyTarget("a", notReadyFor(50*time.Second)), healthyTarget("b", notReadyFor(10*time.Second)),
				healthyTarget("c", noNodeProvisionedAgo(595*time.Second)), healthyTarget("d")},
			healthy: 3, allowed: true, remediationsAllowed: 1, requeueAfter: 5 * time.Second,
		},
		"no targets: nothing to do, nothing to wait for": {
			spec: ready, allowed: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ev, err := evaluate(&tc.spec, tc.targets, tc.external, now)
			if err != nil {
				t.Fatalf("evaluate: %v", err)
			}
			var remediated, cleaned []string
			blocked := map[string]string{}
			for _, o := range ev.outcomes {
				switch o.action {
				case actRemediate:
					remediated = append(remediated, o.target.machine.Name)
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
			if tc.blocked == nil {
				tc.blocked = map[string]string{}
			}
			if !maps.Equal(blocked, tc.blocked) {
				t.Errorf("blocked %v, want %v", blocked, tc.blocked)
			}
			if ev.healthy != tc.healthy || ev.unhealthy != tc.unhealthy || ev.inFlight != tc.inFlight || ev.allowed != tc.allowed {
				t.Errorf("healthy %d unhealthy %d inFlight %d allowed %t, want %d %d %d %t",
					ev.healthy, ev.unhealthy, ev.inFlight, ev.allowed, tc.healthy, tc.unhealthy, tc.inFlight, tc.allowed)
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
	ev, err := evaluate(&spec, []target{healthyTarget("a", nodeGone), healthyTarget("b")}, true, now)
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
