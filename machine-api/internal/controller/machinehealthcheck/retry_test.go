package machinehealthcheck

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/internal/lineage"
)

func limitsSpec(maxRetries *int32, retryPeriod, minHealthy int32) *v1beta1.MachineHealthCheckSpec {
	return &v1beta1.MachineHealthCheckSpec{Remediation: &v1beta1.RemediationLimits{
		MaxRetries: maxRetries, RetryPeriodSeconds: &retryPeriod, MinHealthyPeriodSeconds: &minHealthy,
	}}
}

// TestRetryPolicyJudge protects maxRetries and retryPeriodSeconds: a lineage is remediated at most
// maxRetries times, and not again within retryPeriodSeconds of its last remediation, measured on
// the clock the check reads (a fake one here, stepped from the last remediation).
func TestRetryPolicyJudge(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		spec      *v1beta1.MachineHealthCheckSpec
		lineage   lineage.Lineage
		step      time.Duration // after the last remediation, t0
		exhausted bool
		wait      time.Duration
		why       string
	}{
		"no spec.remediation: no limits": {
			spec: &v1beta1.MachineHealthCheckSpec{}, lineage: lineage.Lineage{ID: "x", Retries: 99, LastRemediated: t0},
		},
		"no maxRetries: no limit on the count": {
			spec: limitsSpec(nil, 0, 600), lineage: lineage.Lineage{ID: "x", Retries: 99, LastRemediated: t0}, step: time.Hour,
		},
		"a first failure of a slot is remediated": {
			spec: limitsSpec(ptr.To[int32](2), 60, 600), lineage: lineage.Lineage{},
		},
		"fewer remediations than maxRetries: remediated": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: lineage.Lineage{ID: "x", Retries: 1, LastRemediated: t0}, step: time.Second,
		},
		"maxRetries remediations: exhausted, whatever the time": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: lineage.Lineage{ID: "x", Retries: 2, LastRemediated: t0}, step: 24 * time.Hour,
			exhausted: true, why: "its lineage x has been remediated 2 times (maxRetries 2), last at 2026-05-04T12:00:00Z",
		},
		"more than maxRetries (lowered meanwhile): exhausted": {
			spec: limitsSpec(ptr.To[int32](1), 0, 600), lineage: lineage.Lineage{ID: "x", Retries: 3, LastRemediated: t0}, exhausted: true,
		},
		"maxRetries 0: nothing is remediated": {
			spec: limitsSpec(ptr.To[int32](0), 0, 600), lineage: lineage.Lineage{}, exhausted: true, why: "maxRetries is 0",
		},
		"retryPeriodSeconds 60, 1s after the last remediation: wait 59s": {
			spec: limitsSpec(ptr.To[int32](5), 60, 600), lineage: lineage.Lineage{ID: "x", Retries: 1, LastRemediated: t0}, step: time.Second,
			wait: 59 * time.Second, why: "its lineage x was last remediated at 2026-05-04T12:00:00Z; not again before 2026-05-04T12:01:00Z (retryPeriodSeconds 60)",
		},
		"retryPeriodSeconds 60, 1s before it ends: wait 1s": {
			spec: limitsSpec(ptr.To[int32](5), 60, 600), lineage: lineage.Lineage{ID: "x", Retries: 1, LastRemediated: t0}, step: 59 * time.Second,
			wait: time.Second,
		},
		"retryPeriodSeconds 60, exactly at its end: remediated": {
			spec: limitsSpec(ptr.To[int32](5), 60, 600), lineage: lineage.Lineage{ID: "x", Retries: 1, LastRemediated: t0}, step: time.Minute,
		},
		"retryPeriodSeconds applies between remediations, not to the first of a lineage": {
			spec: limitsSpec(ptr.To[int32](5), 60, 600), lineage: lineage.Lineage{}, step: time.Second,
		},
		"a lineage without a time recorded (edited by hand) is not held": {
			spec: limitsSpec(ptr.To[int32](5), 60, 600), lineage: lineage.Lineage{ID: "x", Retries: 1},
		},
		"exhaustion comes before the retry period": {
			spec: limitsSpec(ptr.To[int32](1), 60, 600), lineage: lineage.Lineage{ID: "x", Retries: 1, LastRemediated: t0}, step: time.Second,
			exhausted: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clock := testclock.NewFakeClock(t0)
			clock.Step(tc.step)
			v := retryPolicyOf(tc.spec).judge(tc.lineage, clock.Now())
			if v.exhausted != tc.exhausted || v.wait != tc.wait {
				t.Errorf("judge = exhausted %t wait %s, want %t %s (%s)", v.exhausted, v.wait, tc.exhausted, tc.wait, v.why)
			}
			if !strings.Contains(v.why, tc.why) {
				t.Errorf("why %q does not contain %q", v.why, tc.why)
			}
		})
	}
}

// TestRetryPolicyResetDue protects minHealthyPeriodSeconds: a replacement's count is removed once
// it has been healthy that long without interruption, measured from its HealthCheckSucceeded
// condition's turn to True, on the check's (fake) clock.
func TestRetryPolicyResetDue(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	healthy := &metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}
	suspect := &metav1.Condition{Type: v1beta1.HealthCheckSucceededCondition, Status: metav1.ConditionUnknown, LastTransitionTime: metav1.NewTime(t0)}
	counted := lineage.Lineage{ID: "x", Retries: 2, LastRemediated: t0.Add(-time.Hour)}
	tests := map[string]struct {
		spec    *v1beta1.MachineHealthCheckSpec
		lineage lineage.Lineage
		cond    *metav1.Condition
		step    time.Duration
		due     bool
		left    time.Duration
	}{
		"healthy 599s of 600: not yet, 1s left": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: counted, cond: healthy, step: 599 * time.Second, left: time.Second,
		},
		"healthy 600s of 600: due": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: counted, cond: healthy, step: 600 * time.Second, due: true,
		},
		"minHealthyPeriodSeconds 0: due as soon as it is healthy": {
			spec: limitsSpec(ptr.To[int32](2), 0, 0), lineage: counted, cond: healthy, due: true,
		},
		"unset minHealthyPeriodSeconds is the default, 600": {
			spec:    &v1beta1.MachineHealthCheckSpec{Remediation: &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)}},
			lineage: counted, cond: healthy, step: 599 * time.Second, left: time.Second,
		},
		"not healthy yet (this pass writes it healthy): the whole period is ahead": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: counted, cond: suspect, step: time.Hour, left: 600 * time.Second,
		},
		"no condition yet: the whole period is ahead": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: counted, step: time.Hour, left: 600 * time.Second,
		},
		"nothing to reset on the first Machine of a slot": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), lineage: lineage.Lineage{}, cond: healthy, step: time.Hour,
		},
		"lineages not tracked: nothing to reset": {
			spec: &v1beta1.MachineHealthCheckSpec{}, lineage: counted, cond: healthy, step: time.Hour,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clock := testclock.NewFakeClock(t0)
			clock.Step(tc.step)
			due, left := retryPolicyOf(tc.spec).resetDue(tc.lineage, tc.cond, clock.Now())
			if due != tc.due || left != tc.left {
				t.Errorf("resetDue = %t %s, want %t %s", due, left, tc.due, tc.left)
			}
		})
	}
}

// TestNeverBootingSlot protects the point of maxRetries: a slot whose Machines never become
// healthy gets maxRetries replacements, maxRetries+1 Machines in all, and then the check keeps the
// last one. It plays both sides of the lineage protocol on a fake clock, as the controllers do:
// the check judges the slot's current Machine and marks it before the delete, the set gives the
// mark to the Machine it creates (package lineage), until the check says the retries are spent.
func TestNeverBootingSlot(t *testing.T) {
	tests := map[string]struct {
		maxRetries  int32
		retryPeriod int32
		created     int
	}{
		"maxRetries 0: the first Machine is kept": {maxRetries: 0, created: 1},
		"maxRetries 1: two Machines":              {maxRetries: 1, created: 2},
		"maxRetries 2: exactly three Machines":    {maxRetries: 2, created: 3},
		"maxRetries 2 with a retry period longer than the startup timeout: still three, spaced by it": {maxRetries: 2, retryPeriod: 900, created: 3},
		"maxRetries 5: six Machines": {maxRetries: 5, created: 6},
	}
	const startup = 600 * time.Second // nodeStartupTimeoutSeconds
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clock := testclock.NewFakeClock(now)
			spec := &v1beta1.MachineHealthCheckSpec{
				NodeStartupTimeoutSeconds: ptr.To[int32](int32(startup / time.Second)),
				MaxUnhealthy:              ptrIntStr("100%"),
				Remediation:               &v1beta1.RemediationLimits{MaxRetries: ptr.To(tc.maxRetries), RetryPeriodSeconds: ptr.To(tc.retryPeriod)},
			}
			newMachine := func(i int) *v1beta1.Machine {
				m := healthyTarget(fmt.Sprintf("slot-%d", i)).machine
				m.UID = types.UID(fmt.Sprintf("uid-%d", i))
				m.CreationTimestamp = metav1.NewTime(clock.Now())
				m.Status = v1beta1.MachineStatus{Phase: v1beta1.MachinePhaseProvisioned, ProvisionedTime: ptr.To(metav1.NewTime(clock.Now()))}
				return m
			}
			current, created := newMachine(0), 1
			var remediated []time.Time
			for step := 0; step < 100; step++ {
				ev, err := evaluate(spec, []target{{machine: current}}, false, clock.Now())
				if err != nil {
					t.Fatal(err)
				}
				o := ev.outcomes[0]
				if len(ev.exhausted) > 0 {
					if o.blocked != ReasonRetriesExhausted || ev.exhausted[0] != current.Name {
						t.Fatalf("exhausted %v, blocked %q", ev.exhausted, o.blocked)
					}
					break
				}
				if o.action != actRemediate {
					// Waiting for the startup timeout or the retry period: step to when the check
					// asked to be called again, as its requeue would.
					if ev.requeueAfter <= 0 {
						t.Fatalf("Machine %s neither remediated nor waiting (state %d, blocked %q)", current.Name, o.health.state, o.blocked)
					}
					clock.Step(ev.requeueAfter)
					continue
				}
				// The check marks and deletes; the set replaces the Machine it finds marked.
				remediated = append(remediated, clock.Now())
				lineage.Mark(current, clock.Now())
				current.DeletionTimestamp = ptr.To(metav1.NewTime(clock.Now()))
				awaiting, _ := lineage.Sort([]*v1beta1.Machine{current})
				if len(awaiting) != 1 {
					t.Fatalf("the set sees %d Machines awaiting an heir, want 1", len(awaiting))
				}
				next := newMachine(created)
				lineage.Inherit(next, awaiting[0])
				current, created = next, created+1
			}
			if created != tc.created {
				t.Errorf("%d Machines created for the slot, want %d", created, tc.created)
			}
			if got := lineage.Of(current).Retries; got != int(tc.maxRetries) {
				t.Errorf("the Machine kept carries %d retries, want %d", got, tc.maxRetries)
			}
			for i := 1; i < len(remediated); i++ {
				gap := remediated[i].Sub(remediated[i-1])
				if gap < max(startup, seconds(tc.retryPeriod)) {
					t.Errorf("remediation %d came %s after the one before, sooner than the startup timeout or retryPeriodSeconds", i+1, gap)
				}
			}
		})
	}
}
