package sim

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

const defaultReclaimNotice = 2 * time.Minute

var _ provider.InterruptionNotifier = (*Provider)(nil)

// timerKey is one wake-up of a Machine the provider scheduled.
type timerKey struct {
	uid types.UID
	at  time.Time
}

// NotifyInterruptions implements provider.InterruptionNotifier.
func (p *Provider) NotifyInterruptions(notify func(namespace, name string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = notify
}

// Interruption implements provider.InterruptionNotifier: the reclaim of ReclaimAtAnnotation, from
// its notice on. The Machine is woken when the notice starts and when the reclaim comes.
func (p *Provider) Interruption(_ context.Context, m *v1beta1.Machine) (*provider.Interruption, error) {
	at, notice, ok, err := reclaimOf(m)
	if !ok || err != nil {
		return nil, err
	}
	now := p.opts.Clock.Now()
	if announce := at.Add(-notice); now.Before(announce) {
		p.wakeAt(m, announce)
		return nil, nil
	}
	p.wakeAt(m, at)
	return &provider.Interruption{Deadline: at, Reason: "SpotReclaim",
		Message: fmt.Sprintf("the simulated cloud reclaims instance %s (%s)", m.Spec.ProviderID, ReclaimAtAnnotation)}, nil
}

// reclaimed reports whether m's instance has been reclaimed by now.
func (p *Provider) reclaimed(m *v1beta1.Machine) bool {
	at, _, ok, err := reclaimOf(m)
	return ok && err == nil && !p.opts.Clock.Now().Before(at)
}

// wakeAt has the machine controller reconcile m at t (once per Machine and time).
func (p *Provider) wakeAt(m *v1beta1.Machine, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := timerKey{uid: m.UID, at: t}
	if p.notify == nil || p.timers[key] {
		return
	}
	if p.timers == nil {
		p.timers = map[timerKey]bool{}
	}
	p.timers[key] = true
	notify, ns, name := p.notify, m.Namespace, m.Name
	timer := p.opts.Clock.NewTimer(t.Sub(p.opts.Clock.Now()) + 10*time.Millisecond)
	go func() {
		<-timer.C()
		notify(ns, name)
	}()
}

// reclaimOf reads the reclaim knobs of m.
func reclaimOf(m *v1beta1.Machine) (at time.Time, notice time.Duration, ok bool, err error) {
	v, ok := m.Annotations[ReclaimAtAnnotation]
	if !ok {
		return at, 0, false, nil
	}
	if at, err = time.Parse(time.RFC3339, v); err != nil {
		return at, 0, true, fmt.Errorf("sim: annotation %s=%q is no RFC 3339 time", ReclaimAtAnnotation, v)
	}
	notice = defaultReclaimNotice
	if v, set := m.Annotations[ReclaimNoticeAnnotation]; set {
		if notice, err = time.ParseDuration(v); err != nil || notice < 0 {
			return at, 0, true, fmt.Errorf("sim: annotation %s=%q is no duration such as 2m", ReclaimNoticeAnnotation, v)
		}
	}
	return at, notice, true, nil
}
