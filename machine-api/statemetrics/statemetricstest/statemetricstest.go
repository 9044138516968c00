package statemetricstest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"machineapi.dev/machine-api/statemetrics"
)

// Labels is the vocabulary of the machineapi_* metrics: each names a bounded set (namespaces,
// sets, deployments, health checks, Clusters, or a fixed list of values). A label naming a
// Machine, a Node, a pod or an instance is not in it: series would grow with the fleet. One may
// be added only for a gauge whose number of series is bounded by other means, documented as such
// in docs/operations.md, with that bound said here.
var Labels = map[string]string{
	"namespace":          "namespaces",
	"machineset":         "MachineSets",
	"machinedeployment":  "MachineDeployments",
	"machinehealthcheck": "MachineHealthChecks",
	"cluster":            "Clusters",
	"phase":              "Machine phases",
	"ready":              "condition statuses",
	"step":               "deletion steps",
	"reason":             "condition or drain reasons",
	"state":              "replica states",
	"method":             "provider methods",
	"outcome":            "call or drain outcomes",
	"disruption":         "in-place update disruptions (None, Drain)",
	"controller":         "controllers of a manager (a fixed list: every node linker is nodelink)",
}

// row reads a row of the Metrics table: metric, type, labels, exported by.
var row = regexp.MustCompile("^\\| `(machineapi_[a-z_]+)` \\|[^|]*\\|([^|]*)\\| *([a-z-]+) *\\|")

// Documented returns the machineapi_* metrics the Metrics table of the markdown file at path
// lists as exported by exporter (machine-manager or cluster-manager; rows saying "both" count for
// either), sorted by name, with their labels.
func Documented(t testing.TB, path, exporter string) []statemetrics.Metric {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []statemetrics.Metric
	for _, line := range strings.Split(string(data), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil || m[3] != exporter && m[3] != "both" {
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out = append(out, statemetrics.Metric{Name: m[1], Labels: labels})
	}
	slices.SortFunc(out, func(a, b statemetrics.Metric) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Check fails t unless the machineapi_* metrics reg holds are exactly those the docs at path
// list for exporter, with the same labels, every label from Labels.
func Check(t testing.TB, reg prometheus.Collector, path, exporter string) {
	t.Helper()
	got, err := statemetrics.Catalog(reg, "machineapi_")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("the registry holds no machineapi_* metric")
	}
	want := Documented(t, path, exporter)
	for _, m := range got {
		for _, l := range m.Labels {
			if _, ok := Labels[l]; !ok {
				t.Errorf("%s has label %q, which names no bounded set (see statemetricstest.Labels)", m.Name, l)
			}
		}
		i := slices.IndexFunc(want, func(d statemetrics.Metric) bool { return d.Name == m.Name })
		switch {
		case i < 0:
			t.Errorf("%s%v is registered but docs/operations.md does not list it for %s", m.Name, m.Labels, exporter)
		case !slices.Equal(want[i].Labels, m.Labels):
			t.Errorf("%s has labels %v; docs/operations.md says %v", m.Name, m.Labels, want[i].Labels)
		}
	}
	for _, d := range want {
		if !slices.ContainsFunc(got, func(m statemetrics.Metric) bool { return m.Name == d.Name }) {
			t.Errorf("docs/operations.md lists %s for %s, but it is not registered", d.Name, exporter)
		}
	}
}
