package main

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// nominalWritesPerMachine is the yardstick: a machine needs on the order of 10 writes on
// its critical path, so the fastest N machines can come up is N*10/floor seconds.
const nominalWritesPerMachine = 10

// nominalWritesPerLink: linking a pair is one Node patch and one Machine status write.
const nominalWritesPerLink = 2

// host says when and on what a benchmark ran; it heads every report.
type host struct {
	Date        string `json:"date"`
	Go          string `json:"go"`
	CPUs        int    `json:"cpus"`
	LoadAverage string `json:"loadAverageAtStart"`
}

// thisHost is the host now; the caller measures the load average when the run starts.
func thisHost() host {
	return host{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), Go: runtime.Version()}
}

func (h host) heading() string {
	return fmt.Sprintf("\n## machineapi scale benchmark, %s (%d CPUs, load %s, %s)\n\n", h.Date, h.CPUs, h.LoadAverage, h.Go)
}

// results is one run: the floors and the steps (an A/B comparison is a report of its own,
// abComparison).
type results struct {
	host
	ControlPlane string      `json:"controlPlane"`
	Machines     int         `json:"machines"`
	Floor        floorResult `json:"floor"`
	MachineFloor floorResult `json:"machineFloor"`
	// MachineApplyFloor, with -apply-floor: the Machine floor with the status written by
	// server-side apply instead of an update.
	MachineApplyFloor *floorResult `json:"machineApplyFloor,omitempty"`
	// SchemaFloors, with -schema-floor: the Machine floor on copies of the CRD with and without
	// its CEL rules.
	SchemaFloors        *schemaFloors `json:"schemaFloors,omitempty"`
	ScaleUp             stepResult    `json:"scaleUp"`
	HealthCheck         healthResult  `json:"healthCheck"`
	ScaleDown           stepResult    `json:"scaleDown"`
	NodeLink            stepResult    `json:"nodelink"`
	ManagerPeakRSSBytes int64         `json:"managerPeakRSSBytes"`
	// Comparison, with -compare-rounds: 0 -> N against 0 -> -compare-with, in rounds.
	Comparison *scaleComparison `json:"comparison,omitempty"`
}

type stepResult struct {
	Name             string  `json:"name"`
	Machines         int     `json:"machines"`
	Seconds          float64 `json:"seconds"`
	MachinesPerSec   float64 `json:"machinesPerSecond"`
	Writes           float64 `json:"writes"`
	WritesPerMachine float64 `json:"writesPerMachine"`
	WritesPerSec     float64 `json:"writesPerSecond"`
	// WriteRateToFloor is the write rate the system sustained over the floor's.
	WriteRateToFloor float64 `json:"writeRateToFloor"`
	// FloorSeconds is how long N machines take at the floor with nominalWritesPerMachine writes each.
	FloorSeconds float64 `json:"floorDerivedSeconds"`
	// TimeToFloor is Seconds / FloorSeconds (the target for scale-up is at most 1.5).
	TimeToFloor float64 `json:"timeToFloor"`
	// WritesFloorSeconds is how long the writes the step actually made take at the floors: Machine
	// writes at the Machine floor, the others at the Node floor. TimeToWritesFloor is Seconds over
	// it: how far the step is from the API server's limit for its own writes.
	WritesFloorSeconds float64 `json:"writesFloorSeconds,omitempty"`
	TimeToWritesFloor  float64 `json:"timeToWritesFloor,omitempty"`
	P50Seconds         float64 `json:"p50TimeToRunningSeconds,omitempty"`
	P99Seconds         float64 `json:"p99TimeToRunningSeconds,omitempty"`
	PeakRSSBytes       int64   `json:"peakRSSBytes,omitempty"`
	// CPUSeconds is the CPU time each process used during the step (scale-up only): the control
	// plane's components, machine-manager, and the benchmark itself.
	CPUSeconds map[string]float64 `json:"cpuSeconds,omitempty"`
	// CreatedSeconds is when the last Machine appeared, from the start of the step (scale-up
	// only): how long the MachineSet took to create them all.
	CreatedSeconds float64 `json:"createdSeconds,omitempty"`
	// Phases are the p50 and p99 of the time Machines spent in each phase on their way to
	// Running (scale-up only).
	Phases           []phaseResult      `json:"phases,omitempty"`
	WritesByResource map[string]float64 `json:"writesByResource"`
	// ReadsByRequest are the GET and LIST requests the API server answered during the step, by
	// verb and resource (watches are not counted).
	ReadsByRequest map[string]float64 `json:"readsByRequest,omitempty"`
}

type healthResult struct {
	Machines             int     `json:"machines"`
	TimeoutSeconds       float64 `json:"timeoutSeconds"`
	SecondsToRemediation float64 `json:"secondsFromNotReadyToRemediation"`
	SecondsBeyondTimeout float64 `json:"secondsBeyondTimeout"`
}

// newStepResult computes a step's figures. nominal is the writes one machine (or link) needs on the
// step's critical path, for the floor-derived time.
func newStepResult(name string, n int, elapsed time.Duration, requests writeCounts, floor floorResult, nominal int) stepResult {
	s := elapsed.Seconds()
	writes := requests.writes()
	r := stepResult{Name: name, Machines: n, Seconds: s, Writes: writes.total(), WritesByResource: writes, ReadsByRequest: requests.reads()}
	if s > 0 {
		r.MachinesPerSec = float64(n) / s
		r.WritesPerSec = r.Writes / s
	}
	if n > 0 {
		r.WritesPerMachine = r.Writes / float64(n)
	}
	if floor.WritesPerSec > 0 {
		r.WriteRateToFloor = r.WritesPerSec / floor.WritesPerSec
		r.FloorSeconds = float64(n*nominal) / floor.WritesPerSec
		r.TimeToFloor = s / r.FloorSeconds
	}
	return r
}

// withWritesFloor sets the step's WritesFloorSeconds and TimeToWritesFloor.
func (r *stepResult) withWritesFloor(nodeFloor, machineFloor floorResult) {
	if nodeFloor.WritesPerSec <= 0 || machineFloor.WritesPerSec <= 0 {
		return
	}
	for key, n := range r.WritesByResource {
		if resource, _, _ := strings.Cut(key, " "); resource == "machines" || resource == "machines/status" {
			r.WritesFloorSeconds += n / machineFloor.WritesPerSec
		} else {
			r.WritesFloorSeconds += n / nodeFloor.WritesPerSec
		}
	}
	if r.WritesFloorSeconds > 0 {
		r.TimeToWritesFloor = r.Seconds / r.WritesFloorSeconds
	}
}

func (r *results) markdown() string {
	var b strings.Builder
	b.WriteString(r.heading())
	fmt.Fprintf(&b, "Control plane: %s; simulated kubelets send no heartbeats.\n\n", r.ControlPlane)
	fmt.Fprintf(&b, "Write floor: **%.0f writes/s** (%d Node writes by %d writers in %.1fs); floor-derived time = N x %d writes / floor (N x %d for a link).\n\n",
		r.Floor.WritesPerSec, r.Floor.Writes, r.Floor.Workers, r.Floor.Seconds, nominalWritesPerMachine, nominalWritesPerLink)
	if r.MachineFloor.WritesPerSec > 0 {
		fmt.Fprintf(&b, "Machine write floor: **%.0f writes/s** (%d Machine creates and status writes by %d writers in %.1fs); *time ÷ its writes at the floors* = the step's time over how long the writes it made take at the floors (Machine writes at the Machine floor, the rest at the Node floor).\n\n",
			r.MachineFloor.WritesPerSec, r.MachineFloor.Writes, r.MachineFloor.Workers, r.MachineFloor.Seconds)
	}
	if f := r.MachineApplyFloor; f != nil && r.MachineFloor.WritesPerSec > 0 {
		fmt.Fprintf(&b, "Machine write floor with the status written by server-side apply (as the controllers write it) instead of an update: **%.0f writes/s** (%.0f%% of the Machine write floor; %d writes by %d writers in %.1fs).\n\n",
			f.WritesPerSec, 100*f.WritesPerSec/r.MachineFloor.WritesPerSec, f.Writes, f.Workers, f.Seconds)
	}
	if f := r.SchemaFloors; f != nil {
		fmt.Fprintf(&b, "Machine write floor on copies of the CRD (unstructured clients, best of %v and %v writes/s): with its CEL rules **%.0f writes/s**, without **%.0f writes/s**.\n\n",
			f.WithRules.Runs, f.WithoutRules.Runs, f.WithRules.WritesPerSec, f.WithoutRules.WritesPerSec)
	}
	b.WriteString("| step | machines | seconds | machines/s | writes/machine | writes/s (÷ floor) | time ÷ floor-derived | time ÷ its writes at the floors | p50 / p99 to Running |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range []stepResult{r.ScaleUp, r.ScaleDown, r.NodeLink} {
		if s.Name == "" {
			continue
		}
		pct := "-"
		if s.P50Seconds > 0 {
			pct = fmt.Sprintf("%.2fs / %.2fs", s.P50Seconds, s.P99Seconds)
		}
		mix := "-"
		if s.TimeToWritesFloor > 0 {
			mix = fmt.Sprintf("%.2f", s.TimeToWritesFloor)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.1f | %.0f (%.2f) | %.2f | %s | %s |\n",
			s.Name, s.Machines, s.Seconds, s.MachinesPerSec, s.WritesPerMachine, s.WritesPerSec, s.WriteRateToFloor, s.TimeToFloor, mix, pct)
	}
	if h := r.HealthCheck; h.Machines > 0 {
		fmt.Fprintf(&b, "\nHealth check over %d machines: remediation started %.2fs after the Node went NotReady, %.2fs beyond the %.0fs timeout.\n",
			h.Machines, h.SecondsToRemediation, h.SecondsBeyondTimeout, h.TimeoutSeconds)
	}
	if r.ManagerPeakRSSBytes > 0 {
		fmt.Fprintf(&b, "\nmachine-manager peak RSS: %.0f MiB.\n", float64(r.ManagerPeakRSSBytes)/(1<<20))
	}
	if s := r.ScaleUp; len(s.Phases) > 0 {
		fmt.Fprintf(&b, "\nScale-up: the last Machine was created %.1fs after the scale; time per phase (p50 / p99): ", s.CreatedSeconds)
		parts := make([]string, 0, len(s.Phases))
		for _, p := range s.Phases {
			parts = append(parts, fmt.Sprintf("%s %.2fs / %.2fs", p.Name, p.P50Seconds, p.P99Seconds))
		}
		b.WriteString(strings.Join(parts, ", "))
		b.WriteString("\n")
	}
	if s := r.ScaleUp; len(s.CPUSeconds) > 0 {
		total := s.cpuTotal()
		fmt.Fprintf(&b, "\nScale-up CPU: %.0f s of the %.0f s the %d CPUs had (%.0f%%): ", total, s.Seconds*float64(r.CPUs), r.CPUs, 100*total/(s.Seconds*float64(r.CPUs)))
		b.WriteString(breakdownSeconds(s.CPUSeconds))
		b.WriteString("\n")
	}
	if s := r.ScaleUp; len(s.WritesByResource) > 0 {
		b.WriteString("\nScale-up writes by resource: ")
		b.WriteString(breakdown(s.WritesByResource, s.Machines))
		b.WriteString("\n")
	}
	if s := r.ScaleUp; len(s.ReadsByRequest) > 0 {
		b.WriteString("\nScale-up reads: ")
		b.WriteString(breakdown(s.ReadsByRequest, s.Machines))
		b.WriteString("\n")
	}
	if r.Comparison != nil {
		b.WriteString(r.Comparison.markdown(r.CPUs))
	}
	return b.String()
}

func breakdown(w map[string]float64, n int) string {
	return largestFirst(w, func(k string, v float64) string { return fmt.Sprintf("%s %.2f", k, v/float64(max(n, 1))) }) + " (per machine)"
}

func breakdownSeconds(w map[string]float64) string {
	return largestFirst(w, func(k string, v float64) string { return fmt.Sprintf("%s %.1f s", k, v) })
}

// largestFirst formats each entry of w with format, largest value first, comma-separated.
func largestFirst(w map[string]float64, format func(k string, v float64) string) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return w[keys[i]] > w[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, format(k, w[k]))
	}
	return strings.Join(parts, ", ")
}
