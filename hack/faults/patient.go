package faults

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// patientRetry is how often a patient request tries to reach the API server again.
const patientRetry = 250 * time.Millisecond

// PatientTransport wraps the transport of the suite's own watches (the Tracker's cache): a GET
// that cannot connect, because the API server is down, waits and tries again every 250ms until
// it connects or its context ends, instead of failing.
//
// Why: a client-go reflector whose list or watch fails backs off, doubling up to a wait of 30
// to 60 seconds, and keeps that wait once the API server is back. Each scenario that kills the
// API server for half a minute left the Tracker's watches away for up to a minute after the
// restart, the very minute in which the managers catch up: the suite was blind to it (a Machine
// created and deleted then was never seen, a peak never counted). With this transport the
// reflector sees no failure while the API server is down, only a watch that ends, and is back
// as soon as the API server serves it again: about 5 seconds after a restart, the Retry-After
// of its first answer to the watch (a 503, seen in the suite's runs), where it was
// up to a minute. Only requests that never reached a server are retried:
// an answer, even an error, goes back to the reflector as it came.
func PatientTransport(rt http.RoundTripper) http.RoundTripper {
	return patientTransport{next: rt}
}

type patientTransport struct{ next http.RoundTripper }

func (t patientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		resp, err := t.next.RoundTrip(req)
		if err == nil || req.Method != http.MethodGet || !notConnected(err) {
			return resp, err
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(patientRetry):
		}
	}
}

// notConnected reports whether err is a failure to connect: nothing was sent.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
