package machinedeployment

import "time"

// expectationsTimeout is how long a deployment waits for its cache to show its own MachineSet
// writes before it trusts the cache again (the fallback for a lost event).
//
// The deployment's expectations (Reconciler.expectations, a pending.Writes) record, per
// MachineDeployment, the MachineSet writes this process made that its cache does not show yet.
// Every write to a set is based on the cached object and made with optimistic locking, so the
// version it replaced is known: the cache shows the write once the set's resourceVersion is none of
// the versions replaced since. Created sets are awaited until listed, deleted ones until gone (or
// deleting). While any write is outstanding the deployment does not compute another step, so it
// never scales a set twice for one change.
const expectationsTimeout = 5 * time.Minute
