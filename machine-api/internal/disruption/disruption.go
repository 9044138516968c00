package disruption

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Unlimited is Verdict.Allowed when no budget bounds the reason.
const Unlimited = math.MaxInt

// maxChain bounds how many overlapping windows a closing time is looked for across.
const maxChain = 1000

// Verdict is what the budgets allow for one reason at one moment.
type Verdict struct {
	// Allowed is how many more of the pool's Machines may be disrupted now for the reason:
	// Unlimited when no budget in force bounds it.
	Allowed int
	// Budget names the budget that binds (the most restrictive in force), "" when none does.
	Budget string
	// Message says, for a human, what binds and until when; "" when nothing does.
	Message string
	// Until is when the answer may change by itself (a window opens or closes); zero when it
	// does not.
	Until time.Time
}

// Holds reports whether v allows nothing more.
func (v Verdict) Holds() bool { return v.Allowed <= 0 }

// parser reads five-field cron schedules and descriptors (@daily, @every 1h ...).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Decide applies budgets to a disruption for reason of a pool of size Machines, disrupting of
// which are being disrupted already, at now.
func Decide(budgets []v1beta1.DisruptionBudget, reason v1beta1.DisruptionReason, size int32, disrupting int, now time.Time) Verdict {
	v := Verdict{Allowed: Unlimited}
	for i := range budgets {
		b := &budgets[i]
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) {
			continue
		}
		name := Name(b, i)
		w, err := windowOf(b, now)
		if err != nil {
			// A budget that cannot be read holds what it would bound, until it is fixed.
			return Verdict{Budget: name, Message: fmt.Sprintf("disruption budget %s cannot be read: %v; voluntary disruptions it bounds wait until it is fixed", name, err)}
		}
		v.Until = soonest(v.Until, w.change)
		if !w.open {
			continue
		}
		nodes, err := nodesOf(b.Nodes, size)
		if err != nil {
			return Verdict{Budget: name, Message: fmt.Sprintf("disruption budget %s: nodes: %v; voluntary disruptions it bounds wait until it is fixed", name, err)}
		}
		allowed := max(nodes-disrupting, 0)
		if allowed < v.Allowed {
			v.Allowed, v.Budget = allowed, name
			v.Message = describe(b, name, nodes, size, disrupting, reason, w)
		}
	}
	return v
}

// window is where a budget's schedule stands at a moment.
type window struct {
	open   bool      // in force now
	change time.Time // when that changes: the window closes (open) or next opens; zero: never
	closes time.Time // when an open window closes; zero when it is always in force
}

// windowOf says whether b is in force at now. A budget without a schedule always is.
func windowOf(b *v1beta1.DisruptionBudget, now time.Time) (window, error) {
	if b.Schedule == "" {
		return window{open: true}, nil
	}
	if b.DurationSeconds == nil || *b.DurationSeconds <= 0 {
		return window{}, fmt.Errorf("schedule %q needs durationSeconds", b.Schedule)
	}
	loc := time.UTC
	if b.TimeZone != "" {
		l, err := time.LoadLocation(b.TimeZone)
		if err != nil {
			return window{}, fmt.Errorf("timeZone %q is not a time zone name (such as Europe/Berlin): %w", b.TimeZone, err)
		}
		loc = l
	}
	sched, err := parser.Parse(b.Schedule)
	if err != nil {
		return window{}, fmt.Errorf("schedule %q: %w", b.Schedule, err)
	}
	d := time.Duration(*b.DurationSeconds) * time.Second
	at := now.In(loc)
	// The first opening after now-d is the one a window open now began with.
	start := sched.Next(at.Add(-d))
	if start.IsZero() {
		return window{}, nil // the schedule never fires again
	}
	if start.After(at) {
		return window{change: start}, nil
	}
	closes := start.Add(d)
	for range maxChain { // windows that open before this one closes extend it
		next := sched.Next(start)
		if next.IsZero() || !next.Before(closes) {
			break
		}
		start, closes = next, next.Add(d)
	}
	return window{open: true, change: closes, closes: closes}, nil
}

// nodesOf resolves a budget's nodes against the pool's size: a percentage rounds down, but a
// percentage above 0% is never below 1.
func nodesOf(v intstr.IntOrString, size int32) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, int(size), false)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s is negative", v.String())
	}
	if v.Type == intstr.String && n == 0 && size > 0 && strings.TrimSuffix(v.StrVal, "%") != "0" {
		n = 1
	}
	return n, nil
}

// Name is the name of budget b, the i-th of its list: its own, or budget-<i>.
func Name(b *v1beta1.DisruptionBudget, i int) string {
	if b.Name != "" {
		return b.Name
	}
	return fmt.Sprintf("budget-%d", i)
}

// describe says what budget b allows, in words, and until when.
func describe(b *v1beta1.DisruptionBudget, name string, nodes int, size int32, disrupting int, reason v1beta1.DisruptionReason, w window) string {
	limit := b.Nodes.String()
	if b.Nodes.Type == intstr.String {
		limit = fmt.Sprintf("%s of %d = %d", b.Nodes.StrVal, size, nodes)
	}
	msg := fmt.Sprintf("disruption budget %s allows %s Machines disrupted at once for %s; %d are being disrupted", name, limit, reason, disrupting)
	if !w.closes.IsZero() {
		msg += fmt.Sprintf("; its window (%q", b.Schedule)
		if b.TimeZone != "" {
			msg += " in " + b.TimeZone
		}
		msg += fmt.Sprintf(") closes at %s", w.closes.Format(time.RFC3339))
	}
	return msg
}

func soonest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
