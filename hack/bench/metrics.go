package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// writeCounts is a snapshot of apiserver_request_total for mutating verbs, by resource.
type writeCounts map[string]float64

var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true}

// scrapeWrites reads the API server's request counters and sums the mutating ones by resource
// (subresources such as status are counted with their resource as "machines/status").
func scrapeWrites(ctx context.Context, cs kubernetes.Interface) (writeCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	out := writeCounts{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line[len("apiserver_request_total{"):], "} ")
		if !ok {
			continue
		}
		l := parseLabels(labels)
		if !writeVerbs[l["verb"]] {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if sub := l["subresource"]; sub != "" {
			key += "/" + sub
		}
		if code := l["code"]; code != "" && !strings.HasPrefix(code, "2") {
			key += " (" + code + ")" // refused writes, conflicts above all, cost the API server too
		}
		out[key] += v
	}
	return out, sc.Err()
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// since returns the writes made between an earlier snapshot and this one.
func (w writeCounts) since(before writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (w writeCounts) total() float64 {
	t := 0.0
	for _, v := range w {
		t += v
	}
	return t
}

// peakRSS returns a process's peak resident set size in bytes (VmHWM).
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fields := strings.Fields(rest)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
