package machineset

import (
	"time"

	"k8s.io/utils/clock"

	"machineapi.dev/machine-api/internal/pending"
)

// expectationsTimeout is how long the controller waits for its cache to show its own writes
// before it stops waiting and trusts the cache again (a lost watch event must not block a set
// forever). Watches do not lose events in practice; this is the fallback.
const expectationsTimeout = 5 * time.Minute

// unsureCreateCheck is how long after a create whose outcome is unknown (the connection broke, the
// API server timed out) the controller asks the API server itself whether the Machine exists:
// longer than the API server's request timeout (1 minute by default), after which a create still
// in flight has either been stored or been dropped.
const unsureCreateCheck = 70 * time.Second

// newExpectations returns the record of the Machine writes this process made for each set that
// its cache has not shown yet: Machines it created or adopted (awaited in the set's owned list)
// and Machines it deleted or released (awaited out of it, or deleting). While any is outstanding
// the set does not create or delete again, so a stale cache never makes it count the same gap
// twice (Cluster API #13649, #14217). A create whose outcome is unknown stays awaited until the
// cache shows the Machine or, unsureCreateCheck later, the API server says it does not exist.
func newExpectations(c clock.PassiveClock) *pending.Writes {
	return pending.New(c, expectationsTimeout)
}
