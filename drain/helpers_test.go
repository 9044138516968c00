package drain_test

import "time"

// nilTime is the startedAt of a caller that does not track when draining began.
var nilTime time.Time
