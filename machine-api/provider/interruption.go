package provider

import (
	"context"
	"time"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Interruption is the announced end of an instance: a spot or preemptible instance reclaimed, a
// host going into maintenance.
type Interruption struct {
	// Deadline is when the instance is expected to go away.
	Deadline time.Time
	// Reason names the cause in one word (SpotReclaim, Maintenance, ...).
	Reason string
	// Message says more; it reaches the Machine's status and the events.
	Message string
}

// InterruptionNotifier is implemented by providers whose cloud announces that an instance will go
// away. The Machine's MachineSet then creates its replacement first and deletes (drains) it once
// the replacement is Running, or in time before the deadline. A provider without it runs as
// before: its Machines are replaced after their instance is gone.
type InterruptionNotifier interface {
	// Interruption returns the interruption announced for m's instance (m has a providerID), or
	// nil when none is. It is called on each reconcile of a provisioned Machine that is not being
	// deleted, so it answers from what the provider already knows (a queue of its cloud's
	// notices it consumes), not with a call per Machine. An error keeps the last answer.
	Interruption(ctx context.Context, m *v1beta1.Machine) (*Interruption, error)

	// NotifyInterruptions is called once, before the controllers start, with notify: the provider
	// calls it with a Machine's namespace and name when an interruption of its instance is
	// announced or withdrawn, and the machine controller reconciles that Machine (which calls
	// Interruption). notify never blocks.
	NotifyInterruptions(notify func(namespace, name string))
}
