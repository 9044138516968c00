package disruption

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Monday 2026-05-04, 12:00 UTC (14:00 in Berlin).
var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

func budget(nodes string, mutate ...func(*v1beta1.DisruptionBudget)) v1beta1.DisruptionBudget {
	b := v1beta1.DisruptionBudget{Nodes: intstr.Parse(nodes)}
	for _, m := range mutate {
		m(&b)
	}
	return b
}

func named(n string) func(*v1beta1.DisruptionBudget) {
	return func(b *v1beta1.DisruptionBudget) { b.Name = n }
}

func forReasons(r ...v1beta1.DisruptionReason) func(*v1beta1.DisruptionBudget) {
	return func(b *v1beta1.DisruptionBudget) { b.Reasons = r }
}

func during(schedule string, d time.Duration, tz string) func(*v1beta1.DisruptionBudget) {
	return func(b *v1beta1.DisruptionBudget) {
		b.Schedule, b.DurationSeconds, b.TimeZone = schedule, ptr.To(int32(d/time.Second)), tz
	}
}

// TestDecide protects the budget decision: which budgets apply to a reason, percentages of the
// pool, the most restrictive in force winning, windows in a time zone (overlapping ones chained),
// and a budget that cannot be read holding what it bounds.
func TestDecide(t *testing.T) {
	businessHours := during("0 9 * * 1-5", 8*time.Hour, "Europe/Berlin") // 09:00-17:00 Berlin, Mon-Fri
	tests := map[string]struct {
		budgets    []v1beta1.DisruptionBudget
		reason     v1beta1.DisruptionReason
		size       int32
		disrupting int
		step       time.Duration // after t0
		allowed    int
		binding    string
		until      time.Time
		message    string // substring
	}{
		"no budget: unlimited": {
			reason: v1beta1.DisruptionRollout, size: 6, allowed: Unlimited,
		},
		"a count less what is being disrupted": {
			budgets: []v1beta1.DisruptionBudget{budget("2", named("two"))}, reason: v1beta1.DisruptionRollout, size: 6, disrupting: 1,
			allowed: 1, binding: "two", message: "disruption budget two allows 2 Machines disrupted at once for Rollout; 1 are being disrupted",
		},
		"never below zero": {
			budgets: []v1beta1.DisruptionBudget{budget("1")}, reason: v1beta1.DisruptionRollout, size: 6, disrupting: 3,
			allowed: 0, binding: "budget-0",
		},
		"a percentage of the pool, rounded down": {
			budgets: []v1beta1.DisruptionBudget{budget("50%")}, reason: v1beta1.DisruptionScaleDown, size: 5,
			allowed: 2, binding: "budget-0", message: "allows 50% of 5 = 2 Machines",
		},
		"a small percentage of a small pool is still one": {
			budgets: []v1beta1.DisruptionBudget{budget("10%")}, reason: v1beta1.DisruptionScaleDown, size: 3, allowed: 1, binding: "budget-0",
		},
		"0% holds everything": {
			budgets: []v1beta1.DisruptionBudget{budget("0%")}, reason: v1beta1.DisruptionScaleDown, size: 3, allowed: 0, binding: "budget-0",
		},
		"a budget for other reasons does not apply": {
			budgets: []v1beta1.DisruptionBudget{budget("0", forReasons(v1beta1.DisruptionRollout, v1beta1.DisruptionExpired))},
			reason:  v1beta1.DisruptionRemediation, size: 6, allowed: Unlimited,
		},
		"the most restrictive of those that apply wins": {
			budgets: []v1beta1.DisruptionBudget{
				budget("3", named("wide")), budget("1", named("rollouts"), forReasons(v1beta1.DisruptionRollout)), budget("0", named("remediation"), forReasons(v1beta1.DisruptionRemediation)),
			},
			reason: v1beta1.DisruptionRollout, size: 6, allowed: 1, binding: "rollouts",
		},
		"a window in force, in its time zone: business hours freeze rollouts until they end": {
			budgets: []v1beta1.DisruptionBudget{budget("0", named("business-hours"), forReasons(v1beta1.DisruptionRollout), businessHours), budget("2")},
			reason:  v1beta1.DisruptionRollout, size: 6,
			allowed: 0, binding: "business-hours", until: time.Date(2026, 5, 4, 15, 0, 0, 0, time.UTC), // 17:00 Berlin
			message: `its window ("0 9 * * 1-5" in Europe/Berlin) closes at 2026-05-04T17:00:00+02:00`,
		},
		"outside the window, the other budget binds, until the window next opens": {
			budgets: []v1beta1.DisruptionBudget{budget("0", named("business-hours"), forReasons(v1beta1.DisruptionRollout), businessHours), budget("2", named("always"))},
			reason:  v1beta1.DisruptionRollout, size: 6, step: 4 * time.Hour, // 18:00 Berlin
			allowed: 2, binding: "always", until: time.Date(2026, 5, 5, 7, 0, 0, 0, time.UTC), // Tuesday 09:00 Berlin
		},
		"on a Saturday the weekday window stays closed until Monday": {
			budgets: []v1beta1.DisruptionBudget{budget("0", forReasons(v1beta1.DisruptionRollout), businessHours)},
			reason:  v1beta1.DisruptionRollout, size: 6, step: 5 * 24 * time.Hour, // Saturday 14:00 Berlin
			allowed: Unlimited, until: time.Date(2026, 5, 11, 7, 0, 0, 0, time.UTC),
		},
		"the window closes exactly durationSeconds after it opened": {
			budgets: []v1beta1.DisruptionBudget{budget("0", during("0 12 * * *", time.Hour, ""))},
			reason:  v1beta1.DisruptionRollout, size: 6, step: time.Hour,
			allowed: Unlimited, until: t0.Add(24 * time.Hour),
		},
		"a window opening at this very second is in force": {
			budgets: []v1beta1.DisruptionBudget{budget("0", during("0 12 * * *", time.Hour, ""))},
			reason:  v1beta1.DisruptionRollout, size: 6,
			allowed: 0, binding: "budget-0", until: t0.Add(time.Hour),
		},
		"overlapping windows chain: hourly windows of 90 minutes never close": {
			budgets: []v1beta1.DisruptionBudget{budget("0", during("0 * * * *", 90*time.Minute, ""))},
			reason:  v1beta1.DisruptionRollout, size: 6,
			allowed: 0, binding: "budget-0", until: t0.Add(time.Duration(maxChain-1)*time.Hour + 90*time.Minute), // looked for that far, then re-decided
		},
		"a schedule that does not parse holds, and says what to fix": {
			budgets: []v1beta1.DisruptionBudget{budget("2", named("typo"), during("0 9 * * Mon-Fry", time.Hour, ""))},
			reason:  v1beta1.DisruptionScaleDown, size: 6,
			allowed: 0, binding: "typo", message: `disruption budget typo cannot be read: schedule "0 9 * * Mon-Fry"`,
		},
		"an unknown time zone holds, and says what to fix": {
			budgets: []v1beta1.DisruptionBudget{budget("2", during("@daily", time.Hour, "Mars/Olympus"))},
			reason:  v1beta1.DisruptionScaleDown, size: 6,
			allowed: 0, binding: "budget-0", message: `timeZone "Mars/Olympus" is not a time zone name`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clock := testclock.NewFakeClock(t0)
			clock.Step(tc.step)
			v := Decide(tc.budgets, tc.reason, tc.size, tc.disrupting, clock.Now())
			if v.Allowed != tc.allowed || v.Budget != tc.binding || !v.Until.Equal(tc.until) {
				t.Errorf("Decide = allowed %d budget %q until %s, want %d %q %s (message %q)", v.Allowed, v.Budget, v.Until, tc.allowed, tc.binding, tc.until, v.Message)
			}
			if !strings.Contains(v.Message, tc.message) {
				t.Errorf("message %q does not contain %q", v.Message, tc.message)
			}
		})
	}
}
