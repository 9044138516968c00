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

// writeCounts is a snapshot of apiserver_request_total for mutating verbs, by resource, and
// for GET and LIST under keys that start with readPrefix.
type writeCounts map[string]float64

// readPrefix starts the keys of reads in writeCounts.
const readPrefix = "read: "

// reads returns the reads of w, keyed "get machines", "list nodes", ...
func (w writeCounts) reads() writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if rest, ok := strings.CutPrefix(k, readPrefix); ok {
			out[rest] = v
		}
	}
	return out
}

// writes returns the writes of w.
func (w writeCounts) writes() writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if !strings.HasPrefix(k, readPrefix) {
			out[k] = v
		}
	}
	return out
}

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
		read := l["verb"] == "GET" || l["verb"] == "LIST"
		if !writeVerbs[l["verb"]] && !read {
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
		if read {
			key = readPrefix + strings.ToLower(l["verb"]) + " " + key
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

// cpuSeconds returns the CPU time (user and system) a process has used so far, in seconds.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it are space-separated:
	// utime and stime are fields 14 and 15, in clock ticks (100 per second on Linux).
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return (utime + stime) / clockTicks, nil
}

const clockTicks = 100

// cpuSnapshot is the CPU time of each named process.
type cpuSnapshot map[string]float64

// snapshotCPU reads the CPU time of each process (name to pid); processes that cannot be read are
// left out.
func snapshotCPU(pids map[string]int) cpuSnapshot {
	out := cpuSnapshot{}
	for name, pid := range pids {
		if s, err := cpuSeconds(pid); err == nil {
			out[name] = s
		}
	}
	return out
}

// since returns the CPU seconds each process used between before and this snapshot.
func (c cpuSnapshot) since(before cpuSnapshot) map[string]float64 {
	out := map[string]float64{}
	for name, v := range c {
		if b, ok := before[name]; ok {
			out[name] = v - b
		}
	}
	return out
}
