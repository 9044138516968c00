package sim

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// booter registers the Nodes of instances whose boot delay has passed. It runs under the
// manager's leader election, so only one manager registers Nodes.
type booter struct{ p *Provider }

func (b booter) NeedLeaderElection() bool { return true }

// Start registers due Nodes, then sleeps until the next instance is due or Create wakes it.
func (b booter) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("sim-booter")
	const idle = time.Minute
	for {
		wait := idle
		now := b.p.opts.Clock.Now()
		for _, inst := range b.p.store.list() {
			if inst.Registered || inst.BootAt.IsZero() {
				continue
			}
			if due := inst.BootAt.Sub(now); due > 0 {
				wait = min(wait, due)
				continue
			}
			if err := b.p.register(ctx, inst); err != nil {
				logger.Error(err, "registering a Node failed; retrying in 1s", "node", inst.NodeName)
				wait = min(wait, time.Second)
			}
		}
		timer := b.p.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-b.p.wake:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// kickBooter wakes the booter to look at a new instance.
func (p *Provider) kickBooter() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
