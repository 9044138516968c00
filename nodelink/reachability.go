package nodelink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Reachability is what the last probe of the Node side's API server found.
type Reachability struct {
	// Reachable is true when the API server answered GET /readyz with success.
	Reachable bool
	// Since is when Reachable took its current value (the first probe's time at first).
	Since time.Time
	// LastProbe is when the last probe finished; zero before the first.
	LastProbe time.Time
	// Err is why the last probe failed; nil when Reachable.
	Err error
}

// prober probes the Node side's API server every interval, from the linker's start, and tells
// the caller. A cache that cannot reach its API server keeps serving its last state, so an
// unreachable workload cluster unlinks nothing; the probe is how a caller learns about it.
type prober struct {
	client   rest.Interface
	clock    clock.Clock
	interval time.Duration
	onChange func(Reachability)
	// afterProbe, when set, is called with the state after every probe, changed or not (the
	// linker's nodeSight uses it to pace its catch-up check).
	afterProbe func(context.Context, Reachability)
	log        logr.Logger

	mu    sync.Mutex
	state Reachability
}

func newProber(c rest.Interface, opts Options) *prober {
	return &prober{client: c, clock: opts.Clock, interval: opts.ProbeInterval, onChange: opts.OnReachabilityChange, log: opts.Logger}
}

func (p *prober) run(ctx context.Context) {
	for {
		p.probeOnce(ctx)
		t := p.clock.NewTimer(p.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (p *prober) probeOnce(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	err := shortReadyzError(p.client.Get().AbsPath("/readyz").Do(pctx).Error())
	cancel()
	if ctx.Err() != nil {
		return // stopping: says nothing about the API server
	}
	now := p.clock.Now()
	p.mu.Lock()
	first := p.state.LastProbe.IsZero()
	changed := first || p.state.Reachable != (err == nil)
	p.state.LastProbe, p.state.Err = now, err
	if changed {
		p.state.Reachable, p.state.Since = err == nil, now
	}
	state := p.state
	p.mu.Unlock()
	if changed {
		if err != nil {
			p.log.Info("Node-side API server unreachable: linking pauses, nothing is unlinked", "error", err.Error())
		} else if !first {
			p.log.Info("Node-side API server reachable again")
		}
		if p.onChange != nil {
			p.onChange(state)
		}
	}
	if p.afterProbe != nil {
		p.afterProbe(ctx, state)
	}
}

func (p *prober) get() Reachability {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// readyzError is a /readyz that answered, but not with success, said in one short line: the
// status code and the checks that failed. client-go's own message quotes the whole report, a line
// per check (over a kilobyte), which a caller cannot put in an event (notes hold 1 kB) or read at
// a glance; that happens while an API server shuts down, for example.
type readyzError struct {
	code   int32
	failed []string
	err    error
}

func (e *readyzError) Error() string {
	if len(e.failed) == 0 {
		return fmt.Sprintf("GET /readyz answered %d", e.code)
	}
	return fmt.Sprintf("GET /readyz answered %d: %s", e.code, strings.Join(e.failed, ", "))
}

func (e *readyzError) Unwrap() error { return e.err }

// shortReadyzError returns err as a readyzError when it is a /readyz answer whose report it can
// read, and err itself otherwise.
func shortReadyzError(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	st := status.Status()
	if st.Details == nil {
		return err
	}
	for _, c := range st.Details.Causes {
		if c.Type != metav1.CauseTypeUnexpectedServerResponse {
			continue
		}
		e := &readyzError{code: st.Code, err: err}
		for line := range strings.SplitSeq(c.Message, "\n") {
			if check, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
				e.failed = append(e.failed, check)
			}
		}
		return e
	}
	return err
}
