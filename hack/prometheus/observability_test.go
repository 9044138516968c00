package prometheus

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// root is the repository root, seen from this package.
const root = "../.."

// modules are those with alert rules: <module>/config/prometheus/alerts.yaml and its unit tests,
// alerts_test.yaml.
var modules = []string{"machine-api", "cluster-api"}

// dashboard is the Grafana dashboard.
var dashboard = filepath.Join(root, "machine-api", "config", "grafana", "dashboard.json")

// promtool is the promtool build.sh made: $PROMETHEUS_BIN_DIR/promtool (make test sets it), else
// bin/prometheus/<version>/promtool. A missing binary fails the test: run `make prometheus`.
func promtool(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PROMETHEUS_BIN_DIR")
	if dir == "" {
		out, err := exec.Command("./version.sh").Output()
		if err != nil {
			t.Fatalf("version.sh: %v", err)
		}
		dir = filepath.Join(root, "bin", "prometheus", strings.TrimSpace(string(out)))
	}
	path, err := filepath.Abs(filepath.Join(dir, "promtool"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing: run `make prometheus` (or make test, which builds it first)", path)
	}
	return path
}

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// ruleTests is the part of a promtool test file the tests read.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAlertRules: each module's rules pass `promtool check rules`, their unit tests pass
// `promtool test rules`, every alert has a unit test in which it fires, and every alert tells an
// operator what happened and what to do (summary, description, runbook) and how urgent it is.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	for _, m := range modules {
		t.Run(m, func(t *testing.T) {
			dir := filepath.Join(root, m, "config", "prometheus")
			for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
				cmd := exec.Command(tool, args...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("promtool %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
				}
			}
			var rules ruleFile
			readYAML(t, filepath.Join(dir, "alerts.yaml"), &rules)
			var tests ruleTests
			readYAML(t, filepath.Join(dir, "alerts_test.yaml"), &tests)
			fires := map[string]bool{}
			for _, tc := range tests.Tests {
				for _, a := range tc.AlertRuleTest {
					if len(a.ExpAlerts) > 0 {
						fires[a.Alertname] = true
					}
				}
			}
			n := 0
			for _, g := range rules.Groups {
				for _, r := range g.Rules {
					if r.Alert == "" {
						continue
					}
					n++
					if !fires[r.Alert] {
						t.Errorf("alert %s has no unit test in alerts_test.yaml in which it fires", r.Alert)
					}
					for _, a := range []string{"summary", "description", "runbook"} {
						if strings.TrimSpace(r.Annotations[a]) == "" {
							t.Errorf("alert %s has no %s annotation", r.Alert, a)
						}
					}
					if s := r.Labels["severity"]; s != "warning" && s != "critical" {
						t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
					}
				}
			}
			if n == 0 {
				t.Fatalf("%s/alerts.yaml has no alert", dir)
			}
		})
	}
}

// documented reads docs/operations.md: the metrics of its Metrics table and the alerts of its
// Alerts table (the first cell of each row, in backquotes).
func documented(t *testing.T) (metrics, alerts []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-zA-Z_:]+)` \\|")
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "### ") {
			section = strings.TrimLeft(line, "# ")
		}
		m := row.FindStringSubmatch(line)
		switch {
		case m == nil:
		case section == "Metrics":
			metrics = append(metrics, m[1])
		case section == "Alerts":
			alerts = append(alerts, m[1])
		}
	}
	if len(metrics) == 0 || len(alerts) == 0 {
		t.Fatalf("docs/operations.md: found %d metrics under ## Metrics and %d alerts under ## Alerts", len(metrics), len(alerts))
	}
	return metrics, alerts
}

// grafanaVariables are replaced by values before a dashboard query is parsed, as Grafana would.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h", "$namespace", ".*")

// dashboardQueries returns every query of the dashboard, by panel title.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("%s: the dashboard needs a title and a uid", dashboard)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %q (%s) needs a title and at least one query", p.Title, p.Type)
		}
		for _, target := range p.Targets {
			out[p.Title] = append(out[p.Title], target.Expr)
		}
	}
	return out
}

// metricNames parses a PromQL expression with Prometheus's parser and returns the metric names
// its selectors name, histogram series (_bucket, _sum, _count) under their histogram's name when
// known lists it.
func metricNames(expr string, known []string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, base) && !slices.Contains(known, name) {
				name = base
			}
		}
		names = append(names, name)
		return nil
	})
	return names, nil
}

// TestQueriesNameOnlyDocumentedMetrics: every query of the alert rules and of the dashboard is
// valid PromQL and names only metrics docs/operations.md lists (which machine-api's and
// cluster-api's tests hold to what the managers register), so a renamed metric cannot leave a
// dead alert or an empty panel behind; every machineapi_* metric is on the dashboard; and the
// documented alerts are exactly the rules'.
func TestQueriesNameOnlyDocumentedMetrics(t *testing.T) {
	known, docAlerts := documented(t)
	check := func(where, expr string) []string {
		names, err := metricNames(grafanaVariables.Replace(expr), known)
		if err != nil {
			t.Errorf("%s: %q is not valid PromQL: %v", where, expr, err)
		}
		if len(names) == 0 && err == nil {
			t.Errorf("%s: %q names no metric", where, expr)
		}
		for _, n := range names {
			if !slices.Contains(known, n) {
				t.Errorf("%s: %q reads %s, which docs/operations.md does not list", where, expr, n)
			}
		}
		return names
	}
	var ruleAlerts []string
	for _, m := range modules {
		var rules ruleFile
		readYAML(t, filepath.Join(root, m, "config", "prometheus", "alerts.yaml"), &rules)
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				check(fmt.Sprintf("%s alert %s", m, r.Alert), r.Expr)
				ruleAlerts = append(ruleAlerts, r.Alert)
			}
		}
	}
	slices.Sort(ruleAlerts)
	slices.Sort(docAlerts)
	if !slices.Equal(ruleAlerts, docAlerts) {
		t.Errorf("docs/operations.md lists the alerts %v; the rule files have %v", docAlerts, ruleAlerts)
	}

	onDashboard := map[string]bool{}
	for title, exprs := range dashboardQueries(t) {
		for _, e := range exprs {
			for _, n := range check("dashboard panel "+title, e) {
				onDashboard[n] = true
			}
		}
	}
	for _, n := range known {
		if strings.HasPrefix(n, "machineapi_") && !onDashboard[n] {
			t.Errorf("%s is not on the dashboard", n)
		}
	}
}

// TestPrometheusRulesMatchTheRuleFiles: the PrometheusRule of each module has the rule file's
// groups (make generate renders it; make verify fails on a stale one, this says why).
func TestPrometheusRulesMatchTheRuleFiles(t *testing.T) {
	for _, m := range modules {
		dir := filepath.Join(root, m, "config", "prometheus")
		var rules ruleFile
		readYAML(t, filepath.Join(dir, "alerts.yaml"), &rules)
		var pr struct {
			Kind string   `json:"kind"`
			Spec ruleFile `json:"spec"`
		}
		readYAML(t, filepath.Join(dir, "prometheusrule.yaml"), &pr)
		want, _ := json.Marshal(rules)
		got, _ := json.Marshal(pr.Spec)
		if pr.Kind != "PrometheusRule" || string(got) != string(want) {
			t.Errorf("%s/prometheusrule.yaml is not alerts.yaml as a PrometheusRule: run make generate", dir)
		}
	}
}

// TestRunExampleConfig: the Prometheus configuration make run's hints give is valid and loads
// both modules' rules.
func TestRunExampleConfig(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "config", filepath.Join(root, "docs", "examples", "prometheus.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config docs/examples/prometheus.yaml: %v\n%s", err, out)
	}
	for _, m := range modules {
		if !strings.Contains(string(out), m+"/config/prometheus/alerts.yaml") {
			t.Errorf("docs/examples/prometheus.yaml does not load %s's rules:\n%s", m, out)
		}
	}
}
