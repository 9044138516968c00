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

// TestRetryPolicyLineageOf protects minHealthyPeriodSeconds: a replacement's failure starts its
// lineage over when it had passed the check (or had its Node linked) that long before its
// failure began; a check without spec.remediation counts nothing, so every lineage starts over.
func TestRetryPolicyLineageOf(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	counted := map[string]string{v1beta1.LineageAnnotation: "x", v1beta1.LineageRetriesAnnotation: "2",
		v1beta1.LineageRemediatedAtAnnotation: t0.Add(-time.Hour).Format(time.RFC3339)}
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(t0)}
	}
	healthy := cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionTrue)
	tests := map[string]struct {
		spec        *v1beta1.MachineHealthCheckSpec
		annotations map[string]string
		conditions  []metav1.Condition
		failedAfter time.Duration
		retries     int
		reset       bool
	}{
		"healthy 599s of 600 before it failed: the count goes on": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), annotations: counted, conditions: []metav1.Condition{healthy},
			failedAfter: 599 * time.Second, retries: 2,
		},
		"healthy 600s of 600: the lineage starts over": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), annotations: counted, conditions: []metav1.Condition{healthy},
			failedAfter: 600 * time.Second, reset: true,
		},
		"unset minHealthyPeriodSeconds is the default, 600": {
			spec:        &v1beta1.MachineHealthCheckSpec{Remediation: &v1beta1.RemediationLimits{MaxRetries: ptr.To[int32](2)}},
			annotations: counted, conditions: []metav1.Condition{healthy}, failedAfter: 599 * time.Second, retries: 2,
		},
		"suspect before it failed: counted from the link of its Node": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), annotations: counted,
			conditions:  []metav1.Condition{cond(v1beta1.HealthCheckSucceededCondition, metav1.ConditionUnknown), cond(v1beta1.NodeLinkedCondition, metav1.ConditionTrue)},
			failedAfter: time.Hour, reset: true,
		},
		"never had a Node: the count goes on however long ago": {
			spec: limitsSpec(ptr.To[int32](2), 0, 600), annotations: counted, failedAfter: 24 * time.Hour, retries: 2,
		},
		"lineages not tracked: every failure starts over": {
			spec: &v1beta1.MachineHealthCheckSpec{}, annotations: counted, retries: 2, reset: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: tc.annotations}, Status: v1beta1.MachineStatus{Conditions: tc.conditions}}
			l, reset := retryPolicyOf(tc.spec).lineageOf(m, t0.Add(tc.failedAfter))
			if l.Retries != tc.retries || reset != tc.reset || l.ID != "x" {
				t.Errorf("lineageOf = %+v reset %t, want %d retries, reset %t, lineage x", l, reset, tc.retries, tc.reset)
			}
		})
	}
}

// TestNeverBootingSlot protects the point of maxRetries: a slot whose Machines never become
// healthy gets maxRetries replacements, maxRetries+1 Machines in all, and then the check keeps the
// last one. It plays both sides of remediation by the owner on a fake clock, as the controllers do:
// the check judges the slot's current Machine and writes its verdict, the set creates the
// replacement carrying the lineage (package lineage) and deletes the Machine, until the check
// says the retries are spent.
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
				ev, err := evaluate(spec, []target{{machine: current}}, false, time.Time{}, clock.Now())
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
				// The check writes its verdict; the set replaces the Machine it finds requested.
				remediated = append(remediated, clock.Now())
				v, ours := machineVerdict(&o, remedyOf(&v1beta1.MachineHealthCheck{Spec: *spec}), false)
				if !ours || v.owner == nil {
					t.Fatalf("the verdict on %s asks no owner to remediate it: %+v", current.Name, v)
				}
				v.owner.LastTransitionTime = metav1.NewTime(clock.Now())
				current.Status.Conditions = append(current.Status.Conditions, v.health, *v.owner)
				awaiting, _ := lineage.Sort([]*v1beta1.Machine{current}, lineage.IsRequested)
				if len(awaiting) != 1 {
					t.Fatalf("the set sees %d Machines awaiting a replacement, want 1", len(awaiting))
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
