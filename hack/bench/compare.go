package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// scaleComparison is -compare-rounds: the throughput of 0 -> N scale-ups against 0 -> small ones,
// each on a fresh control plane. One pair of runs cannot show it on a noisy machine (the same
// scale-up moves by a quarter from one run to the next), so the runs come in rounds, the order
// swapped every round (small first, then N first) so that a drift of the machine over time does
// not favour one size, and the ratio is reported per round with its median and spread.
type scaleComparison struct {
	SmallMachines int               `json:"smallMachines"`
	Machines      int               `json:"machines"`
	Rounds        []comparisonRound `json:"rounds"`
	// MedianRatio, MinRatio and MaxRatio are over the rounds' Ratio.
	MedianRatio float64 `json:"medianRatio"`
	MinRatio    float64 `json:"minRatio"`
	MaxRatio    float64 `json:"maxRatio"`
}

// comparisonRound is one 0 -> small and one 0 -> N scale-up, run one after the other.
type comparisonRound struct {
	SmallFirst bool `json:"smallFirst"`
	// Small and Large are the two scale-ups' figures, each with the CPU seconds every process
	// used: equal CPU per Machine means the work per Machine does not grow with N, and a
	// throughput gap is then the machine's noise or idle CPU rather than the design.
	Small stepResult `json:"small"`
	Large stepResult `json:"large"`
	// Ratio is Large's machines/s over Small's.
	Ratio float64 `json:"ratio"`
}

// compare runs o.compareRounds rounds of a 0 -> o.compareWith and a 0 -> o.machines scale-up, each
// on its own fresh control plane, with the other steps, the extra floors and the profiles left out.
func compare(ctx context.Context, o options) (*scaleComparison, error) {
	c := &scaleComparison{SmallMachines: o.compareWith, Machines: o.machines}
	if o.compareWith <= 0 || o.compareWith == o.machines {
		return nil, fmt.Errorf("-compare-with=%d: give a number of machines above 0 other than -machines=%d", o.compareWith, o.machines)
	}
	for round := range o.compareRounds {
		r := comparisonRound{SmallFirst: round%2 == 0}
		sizes := []int{o.compareWith, o.machines}
		if !r.SmallFirst {
			slices.Reverse(sizes)
		}
		for _, n := range sizes {
			logf("comparison round %d of %d: 0 -> %d on a fresh control plane", round+1, o.compareRounds, n)
			one := o
			one.machines = n
			one.skip = "mhc,scaledown,nodelink"
			one.applyFloor, one.schemaFloor = false, false
			one.apiserverProfile, one.managerProfile, one.audit = "", "", ""
			res, err := run(ctx, one)
			if err != nil {
				return c, fmt.Errorf("comparison round %d, 0 -> %d: %w", round+1, n, err)
			}
			s := res.ScaleUp
			logf("  0 -> %d: %.1f machines/s, %.1f ms of CPU per Machine, CPUs %.0f%% busy", n, s.MachinesPerSec, 1000*s.cpuPerMachine(), 100*s.cpuUse(res.CPUs))
			if n == o.compareWith {
				r.Small = s
			} else {
				r.Large = s
			}
		}
		if r.Small.MachinesPerSec > 0 {
			r.Ratio = r.Large.MachinesPerSec / r.Small.MachinesPerSec
		}
		c.Rounds = append(c.Rounds, r)
	}
	c.MedianRatio, c.MinRatio, c.MaxRatio = spread(c.ratios())
	return c, nil
}

func (c *scaleComparison) ratios() []float64 {
	out := make([]float64, 0, len(c.Rounds))
	for _, r := range c.Rounds {
		out = append(out, r.Ratio)
	}
	return out
}

// spread returns the median, the smallest and the largest of v (zeros when v is empty).
func spread(v []float64) (median, lowest, highest float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	median = s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return median, s[0], s[len(s)-1]
}

// cpuPerMachine is the CPU seconds all measured processes used per Machine in the step.
func (r stepResult) cpuPerMachine() float64 {
	if r.Machines == 0 {
		return 0
	}
	return r.cpuTotal() / float64(r.Machines)
}

// cpuUse is the share of the CPUs' time the measured processes used during the step.
func (r stepResult) cpuUse(cpus int) float64 {
	if r.Seconds <= 0 || cpus <= 0 {
		return 0
	}
	return r.cpuTotal() / (r.Seconds * float64(cpus))
}

func (r stepResult) cpuTotal() float64 {
	total := 0.0
	for _, v := range r.CPUSeconds {
		total += v
	}
	return total
}

func (c *scaleComparison) markdown(cpus int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nThroughput of 0 -> %d against 0 -> %d, each on a fresh control plane, %d rounds with the order swapped every round: **median %.0f%%** (%.0f%% to %.0f%%).\n\n",
		c.Machines, c.SmallMachines, len(c.Rounds), 100*c.MedianRatio, 100*c.MinRatio, 100*c.MaxRatio)
	fmt.Fprintf(&b, "| round | first | %d: machines/s | %d: machines/s | ratio | CPU ms per Machine (%d / %d) | CPUs busy (%d / %d) |\n",
		c.SmallMachines, c.Machines, c.SmallMachines, c.Machines, c.SmallMachines, c.Machines)
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for i, r := range c.Rounds {
		first := c.Machines
		if r.SmallFirst {
			first = c.SmallMachines
		}
		fmt.Fprintf(&b, "| %d | %d | %.1f | %.1f | %.0f%% | %.1f / %.1f | %.0f%% / %.0f%% |\n", i+1, first,
			r.Small.MachinesPerSec, r.Large.MachinesPerSec, 100*r.Ratio, 1000*r.Small.cpuPerMachine(), 1000*r.Large.cpuPerMachine(),
			100*r.Small.cpuUse(cpus), 100*r.Large.cpuUse(cpus))
	}
	b.WriteString("\nCPU ms per Machine by process, summed over the rounds (" + strconv.Itoa(c.SmallMachines) + " / " + strconv.Itoa(c.Machines) + "): ")
	b.WriteString(c.cpuByProcess())
	b.WriteString("\n")
	return b.String()
}

// cpuByProcess formats each process's CPU milliseconds per Machine at both sizes, over all rounds,
// the process that used the most first.
func (c *scaleComparison) cpuByProcess() string {
	small, large := map[string]float64{}, map[string]float64{}
	smallMachines, largeMachines := 0, 0
	for _, r := range c.Rounds {
		for p, v := range r.Small.CPUSeconds {
			small[p] += v
		}
		for p, v := range r.Large.CPUSeconds {
			large[p] += v
		}
		smallMachines += r.Small.Machines
		largeMachines += r.Large.Machines
	}
	return largestFirst(large, func(p string, v float64) string {
		return fmt.Sprintf("%s %.1f / %.1f", p, 1000*small[p]/float64(max(smallMachines, 1)), 1000*v/float64(max(largeMachines, 1)))
	})
}
