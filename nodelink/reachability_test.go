package nodelink

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestProbeErrorIsShort protects the reachability error a caller puts in conditions and events:
// a /readyz that fails (an API server shutting down) is one short line naming the failed checks,
// not the whole report, and it still unwraps to the API error.
func TestProbeErrorIsShort(t *testing.T) {
	var report strings.Builder
	for i := range 40 {
		report.WriteString("[+]poststarthook/check-" + string(rune('a'+i%26)) + " ok\n")
	}
	report.WriteString("[-]shutdown failed: reason withheld\nreadyz check failed\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(report.String()))
	}))
	defer srv.Close()
	disc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	p := newProber(disc.RESTClient(), Options{Clock: clocktesting.NewFakeClock(time.Now()), ProbeInterval: time.Second})
	p.probeOnce(context.Background())

	got := p.get()
	if got.Reachable || got.Err == nil {
		t.Fatalf("probe of a failing /readyz = %+v, want unreachable with an error", got)
	}
	if want := "GET /readyz answered 500: shutdown failed: reason withheld"; got.Err.Error() != want {
		t.Errorf("error = %q (%d bytes), want %q", got.Err, len(got.Err.Error()), want)
	}
	if !apierrors.IsInternalError(got.Err) {
		t.Errorf("the short error no longer unwraps to the API error: %v", got.Err)
	}

	srv.Close()
	p.probeOnce(context.Background())
	if err := p.get().Err; err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a closed server's error = %v, want client-go's own (connection refused)", err)
	}
}
