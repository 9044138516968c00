package statemetrics_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/machine-api/statemetrics"
)

var desc = prometheus.NewDesc("machineapi_test_things", "Things.", []string{"namespace", "state"}, nil)

func things(n float64) statemetrics.CollectFunc {
	return func(_ context.Context, _ client.Reader, ch chan<- prometheus.Metric) error {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, n, "default", "ready")
		return nil
	}
}

func gather(t *testing.T, c prometheus.Collector) (int, error) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	n := 0
	for _, f := range families {
		n += len(f.GetMetric())
	}
	return n, err
}

// TestOnlyTheElectedReplicaExports: a replica waiting for the lease exports nothing, so a sum
// over the replicas counts each object once.
func TestOnlyTheElectedReplicaExports(t *testing.T) {
	elected := make(chan struct{})
	c := statemetrics.New(nil, elected, things(3), desc)
	if n, err := gather(t, c); err != nil || n != 0 {
		t.Fatalf("before election: %d series, %v; want none", n, err)
	}
	close(elected)
	if n, err := gather(t, c); err != nil || n != 1 {
		t.Fatalf("once elected: %d series, %v; want 1", n, err)
	}
	if n, err := gather(t, statemetrics.New(nil, nil, things(3), desc)); err != nil || n != 1 {
		t.Fatalf("without leader election: %d series, %v; want 1", n, err)
	}
}

// TestAFailedReadFailsTheScrape: a cache that cannot be read makes the scrape fail rather than
// report a partial picture as if it were whole.
func TestAFailedReadFailsTheScrape(t *testing.T) {
	c := statemetrics.New(nil, nil, func(context.Context, client.Reader, chan<- prometheus.Metric) error {
		return errors.New("cache not synced")
	}, desc)
	if _, err := gather(t, c); err == nil {
		t.Fatal("the scrape succeeded")
	}
}

// TestRegisterReplaces: a second manager in one process (tests) exports its own state, not the
// first one's.
func TestRegisterReplaces(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, n := range []float64{1, 2} {
		if err := statemetrics.Register(reg, statemetrics.New(nil, nil, things(n), desc)); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetMetric()[0].GetGauge().GetValue() != 2 {
		t.Fatalf("got %v, %v; want the second collector's value 2", families, err)
	}
}

func TestCatalogListsNamesAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(statemetrics.New(nil, nil, things(1), desc),
		prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "machineapi_test_seconds", Help: "h"}, []string{"outcome"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "c"}))
	got, err := statemetrics.Catalog(reg, "machineapi_")
	if err != nil {
		t.Fatal(err)
	}
	want := []statemetrics.Metric{
		{Name: "machineapi_test_seconds", Labels: []string{"outcome"}},
		{Name: "machineapi_test_things", Labels: []string{"namespace", "state"}},
	}
	if !slices.EqualFunc(got, want, func(a, b statemetrics.Metric) bool { return a.Name == b.Name && slices.Equal(a.Labels, b.Labels) }) {
		t.Fatalf("Catalog = %v, want %v", got, want)
	}
}

func TestReplicasSendsEveryState(t *testing.T) {
	rd := prometheus.NewDesc("machineapi_test_replicas", "r", []string{"namespace", "name", "state"}, nil)
	ch := make(chan prometheus.Metric, 10)
	statemetrics.Replicas{Desired: 3, Current: 3, Ready: 2, Available: 1, UpToDate: 3}.Send(ch, rd, "default", "web")
	close(ch)
	if len(ch) != 5 {
		t.Fatalf("%d samples, want one per state (5)", len(ch))
	}
}
