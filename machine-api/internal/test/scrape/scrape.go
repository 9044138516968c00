package scrape

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Series returns the series of metric name that g exports, keyed by their labels as
// `a="x",b="y"` (sorted by name) and keeping only those whose labels include every pair of match:
// the value of a gauge or counter, the sample count of a histogram. It fails the test through
// fail when g cannot be gathered.
func Series(g prometheus.Gatherer, name string, match map[string]string, fail func(error)) map[string]float64 {
	families, err := g.Gather()
	if err != nil {
		fail(err)
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if key, ok := keyOf(m, match); ok {
				out[key] = valueOf(m)
			}
		}
	}
	return out
}

// Of is a Gatherer of the collectors cs alone.
func Of(cs ...prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	return reg
}

func keyOf(m *dto.Metric, match map[string]string) (string, bool) {
	parts := make([]string, 0, len(m.GetLabel()))
	seen := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok {
			if v != l.GetValue() {
				return "", false
			}
			seen++
		}
		parts = append(parts, l.GetName()+"="+`"`+l.GetValue()+`"`)
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), seen == len(match)
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}
