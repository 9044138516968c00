package faults

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestPatientTransport: a GET sent while nothing listens is answered once a server listens on
// that address; a GET whose context ends first, and a POST, fail as they did.
func TestPatientTransport(t *testing.T) {
	// A free loopback address with nothing listening on it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	rt := PatientTransport(&http.Transport{})
	// send returns the status of the answer, or the error of a request that got none.
	send := func(ctx context.Context, method string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/api", nil)
		if err != nil {
			return 0, err
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}

	t.Run("POST is not retried", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := send(ctx, http.MethodPost); err == nil || ctx.Err() != nil {
			t.Fatalf("a POST to nothing: got err %v after the context ended: %v; want connection refused at once", err, ctx.Err())
		}
	})

	t.Run("GET gives up when its context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := send(ctx, http.MethodGet)
		if err == nil || ctx.Err() == nil {
			t.Fatalf("a GET to nothing: got err %v before its context ended; want it to wait until then", err)
		}
	})

	t.Run("GET is answered by the server that comes up", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		type result struct {
			status int
			err    error
		}
		done := make(chan result, 1)
		go func() {
			status, err := send(ctx, http.MethodGet)
			done <- result{status: status, err: err}
		}()
		select {
		case r := <-done:
			t.Fatalf("the GET returned (%d, %v) while nothing listened", r.status, r.err)
		case <-time.After(time.Second):
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusTeapot)
		})}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening again on %s: %v", addr, err)
		}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		r := <-done
		if r.err != nil || r.status != http.StatusTeapot {
			t.Fatalf("got (%d, %v); want the server's answer %d", r.status, r.err, http.StatusTeapot)
		}
	})
}
