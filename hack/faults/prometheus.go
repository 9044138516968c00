package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"machineapi.dev/drain/testplane/process"
)

// Prometheus is a real Prometheus server (built from the module hack/prometheus pins) run as a
// child process on a loopback port, scraping components and evaluating alert rules, read through
// its HTTP API.
type Prometheus struct {
	addr string
	proc *process.Process
	log  string
}

// PrometheusOptions say what a Prometheus scrapes and evaluates, and how often.
type PrometheusOptions struct {
	// Binary is the prometheus binary.
	Binary string
	// Dir holds its configuration, data and log.
	Dir string
	// Targets are the scrape targets: job name to host:port.
	Targets map[string]string
	// RuleFiles are the rule files to evaluate.
	RuleFiles []string
	// Interval is both the scrape and the evaluation interval.
	Interval time.Duration
}

// StartPrometheus writes the configuration and starts Prometheus; it returns once it is ready.
func StartPrometheus(ctx context.Context, o PrometheusOptions) (*Prometheus, error) {
	type staticConfig struct {
		Targets []string `json:"targets"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	cfg := struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []scrapeConfig    `json:"scrape_configs"`
	}{
		Global:    map[string]string{"scrape_interval": o.Interval.String(), "evaluation_interval": o.Interval.String()},
		RuleFiles: o.RuleFiles,
	}
	jobs := make([]string, 0, len(o.Targets))
	for job := range o.Targets {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	for _, job := range jobs {
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, scrapeConfig{JobName: job, StaticConfigs: []staticConfig{{Targets: []string{o.Targets[job]}}}})
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	config := filepath.Join(o.Dir, "prometheus.yaml")
	if err := os.WriteFile(config, data, 0o644); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := &Prometheus{addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(o.Dir, "prometheus.log")}
	p.proc, err = process.Start("prometheus", o.Binary, []string{
		"--config.file=" + config, "--storage.tsdb.path=" + filepath.Join(o.Dir, "data"), "--web.listen-address=" + p.addr,
	}, p.log)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get("http://" + p.addr + "/-/ready"); err == nil { //nolint:noctx // a loopback probe with the deadline below
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.proc.Done():
			err := p.proc.Err()
			if err == nil {
				err = errors.New("exit status 0")
			}
			return nil, fmt.Errorf("prometheus exited: %w; see %s", err, p.log)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("prometheus was not ready within a minute: see %s", p.log)
		}
	}
}

// Stop stops Prometheus.
func (p *Prometheus) Stop() { p.proc.Stop(10 * time.Second) }

// Log is Prometheus's log file.
func (p *Prometheus) Log() string { return p.log }

// get calls the HTTP API at path with query and decodes the data of its answer into out.
func (p *Prometheus) get(ctx context.Context, path string, query url.Values, out any) error {
	u := url.URL{Scheme: "http", Host: p.addr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("%s answered %d: %s", path, resp.StatusCode, body)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s?%s: %s", path, query.Encode(), answer.Error)
	}
	return json.Unmarshal(answer.Data, out)
}

// Alert is an alert Prometheus holds.
type Alert struct {
	Name   string
	State  string // pending, firing
	Labels map[string]string
}

// Alerts returns the active alerts (pending and firing; resolved ones are not listed).
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	out := make([]Alert, 0, len(data.Alerts))
	for _, a := range data.Alerts {
		out = append(out, Alert{Name: a.Labels["alertname"], State: a.State, Labels: a.Labels})
	}
	return out, nil
}

// TargetsUp returns the jobs whose targets Prometheus scraped successfully last time.
func (p *Prometheus) TargetsUp(ctx context.Context) ([]string, error) {
	var data struct {
		ActiveTargets []struct {
			Labels map[string]string `json:"labels"`
			Health string            `json:"health"`
		} `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, err
	}
	var up []string
	for _, t := range data.ActiveTargets {
		if t.Health == "up" {
			up = append(up, t.Labels["job"])
		}
	}
	slices.Sort(up)
	return up, nil
}

// Sample is one series of a query's answer.
type Sample struct {
	Labels map[string]string
	Value  string
}

// Query evaluates expr now and returns its series (an instant vector; a scalar is one sample
// without labels).
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var v []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(v))
		for _, s := range v {
			out = append(out, Sample{Labels: s.Metric, Value: fmt.Sprint(s.Value[1])})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Value: fmt.Sprint(v[1])}}, nil
	}
	return nil, fmt.Errorf("query %q: unexpected result type %s", expr, data.ResultType)
}

// ageThreshold is the comparison that ends the expression of an alert on the age of something
// (a *_oldest_seconds gauge over a number of seconds).
var ageThreshold = regexp.MustCompile(`(_oldest_seconds\)?)\s*>\s*[0-9.]+\s*$`)

// RenderRules writes the rule file src to dst for a test that cannot wait the real durations:
// every alert's `for` becomes forDuration, and an alert on an age (its expression ends in
// "..._oldest_seconds) > N") fires on any age, "> 0". It returns the alerts whose threshold it
// changed. The rules themselves, with their real durations, are unit-tested by promtool.
func RenderRules(src, dst string, forDuration time.Duration) ([]string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	var file map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	groups, _ := file["groups"].([]any)
	if len(groups) == 0 {
		return nil, fmt.Errorf("%s has no rule groups", src)
	}
	var aged []string
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			name, _ := rule["alert"].(string)
			if name == "" {
				continue
			}
			rule["for"] = forDuration.String()
			if expr, _ := rule["expr"].(string); ageThreshold.MatchString(expr) {
				rule["expr"] = ageThreshold.ReplaceAllString(expr, "$1 > 0")
				aged = append(aged, name)
			}
		}
	}
	out, err := yaml.Marshal(file)
	if err != nil {
		return nil, err
	}
	return aged, os.WriteFile(dst, out, 0o644)
}
