package main

import (
	"context"
	"fmt"
	"strings"
)

// abComparison is -ab-manager: the same 0 -> N scale-up with two machine-manager builds, A
// (-machine-manager) and B (-ab-manager), each run on its own fresh control plane, alternating
// A, B then B, A round after round so that a drift of a busy machine favours neither, with the
// floors and the other steps left out. One pair of runs cannot show a change of a tenth on a
// noisy machine; the rounds' medians can, and their spread says how far to trust them.
type abComparison struct {
	host
	A        string    `json:"a"`
	B        string    `json:"b"`
	Machines int       `json:"machines"`
	Rounds   []abRound `json:"rounds"`
	// MedianA and MedianB are each build's medians over the rounds.
	MedianA abFigures `json:"medianA"`
	MedianB abFigures `json:"medianB"`
}

// abRound is one scale-up with each build.
type abRound struct {
	BFirst bool       `json:"bFirst"`
	A      stepResult `json:"a"`
	B      stepResult `json:"b"`
}

// abFigures are the figures the targets are stated in.
type abFigures struct {
	MachinesPerSec   float64 `json:"machinesPerSecond"`
	APIServerCPUms   float64 `json:"apiserverCPUMillisecondsPerMachine"`
	ManagerCPUms     float64 `json:"managerCPUMillisecondsPerMachine"`
	P50Seconds       float64 `json:"p50TimeToRunningSeconds"`
	P99Seconds       float64 `json:"p99TimeToRunningSeconds"`
	WritesPerMachine float64 `json:"writesPerMachine"`
}

func figuresOf(s stepResult) abFigures {
	per := func(process string) float64 {
		if s.Machines == 0 {
			return 0
		}
		return 1000 * s.CPUSeconds[process] / float64(s.Machines)
	}
	return abFigures{MachinesPerSec: s.MachinesPerSec, APIServerCPUms: per("kube-apiserver"), ManagerCPUms: per("machine-manager"),
		P50Seconds: s.P50Seconds, P99Seconds: s.P99Seconds, WritesPerMachine: s.WritesPerMachine}
}

// abCompare runs o.abRounds rounds of a 0 -> o.machines scale-up with each build.
func abCompare(ctx context.Context, o options) (*abComparison, error) {
	c := &abComparison{host: thisHost(), A: o.managerBin, B: o.abManager, Machines: o.machines}
	c.LoadAverage = loadAverage()
	for round := range o.abRounds {
		r := abRound{BFirst: round%2 == 1}
		builds := []string{"A", "B"}
		if r.BFirst {
			builds = []string{"B", "A"}
		}
		for _, build := range builds {
			logf("A/B round %d of %d: build %s, 0 -> %d on a fresh control plane", round+1, o.abRounds, build, o.machines)
			one := o
			one.skip = "mhc,scaledown,nodelink"
			one.noFloors = true
			one.applyFloor, one.schemaFloor = false, false
			one.apiserverProfile, one.managerProfile, one.audit = "", "", ""
			if build == "B" {
				one.managerBin = o.abManager
			}
			res, err := run(ctx, one)
			if err != nil {
				return c, fmt.Errorf("A/B round %d, build %s: %w", round+1, build, err)
			}
			f := figuresOf(res.ScaleUp)
			logf("  build %s: %.1f machines/s, kube-apiserver %.1f ms CPU per Machine, p50 %.2fs to Running, %.2f writes per Machine",
				build, f.MachinesPerSec, f.APIServerCPUms, f.P50Seconds, f.WritesPerMachine)
			if build == "A" {
				r.A = res.ScaleUp
			} else {
				r.B = res.ScaleUp
			}
		}
		c.Rounds = append(c.Rounds, r)
	}
	c.MedianA, c.MedianB = c.medians(func(r abRound) stepResult { return r.A }), c.medians(func(r abRound) stepResult { return r.B })
	return c, nil
}

// medians returns the median of each figure of one build over the rounds.
func (c *abComparison) medians(of func(abRound) stepResult) abFigures {
	median := func(field func(abFigures) float64) float64 {
		v := make([]float64, 0, len(c.Rounds))
		for _, r := range c.Rounds {
			v = append(v, field(figuresOf(of(r))))
		}
		m, _, _ := spread(v)
		return m
	}
	return abFigures{
		MachinesPerSec:   median(func(f abFigures) float64 { return f.MachinesPerSec }),
		APIServerCPUms:   median(func(f abFigures) float64 { return f.APIServerCPUms }),
		ManagerCPUms:     median(func(f abFigures) float64 { return f.ManagerCPUms }),
		P50Seconds:       median(func(f abFigures) float64 { return f.P50Seconds }),
		P99Seconds:       median(func(f abFigures) float64 { return f.P99Seconds }),
		WritesPerMachine: median(func(f abFigures) float64 { return f.WritesPerMachine }),
	}
}

func (c *abComparison) markdown() string {
	var b strings.Builder
	b.WriteString(c.heading())
	fmt.Fprintf(&b, "A/B: 0 -> %d with A = %s and B = %s, each run on a fresh control plane, %d rounds alternating the order.\n\n", c.Machines, c.A, c.B, len(c.Rounds))
	b.WriteString("| round | build | machines/s | kube-apiserver ms CPU / Machine | machine-manager ms CPU / Machine | p50 / p99 to Running | writes / Machine |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	row := func(round, build string, f abFigures) {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f | %.2fs / %.2fs | %.2f |\n", round, build,
			f.MachinesPerSec, f.APIServerCPUms, f.ManagerCPUms, f.P50Seconds, f.P99Seconds, f.WritesPerMachine)
	}
	for i, r := range c.Rounds {
		first, second := "A", "B"
		if r.BFirst {
			first, second = "B", "A"
		}
		for _, build := range []string{first, second} {
			s := r.A
			if build == "B" {
				s = r.B
			}
			row(fmt.Sprint(i+1), build, figuresOf(s))
		}
	}
	row("**median**", "A", c.MedianA)
	row("**median**", "B", c.MedianB)
	return b.String()
}
