package main

import (
	"strings"
	"testing"
)

func TestABMediansAreEachBuildsOwn(t *testing.T) {
	step := func(perSec, apiserverCPU, p50 float64) stepResult {
		return stepResult{Machines: 1000, MachinesPerSec: perSec, P50Seconds: p50, WritesPerMachine: 7,
			CPUSeconds: map[string]float64{"kube-apiserver": apiserverCPU, "machine-manager": 10}}
	}
	c := &abComparison{Machines: 1000, Rounds: []abRound{
		{A: step(40, 50, 12), B: step(44, 30, 8)},
		{BFirst: true, A: step(30, 60, 20), B: step(35, 33, 9)},
		{A: step(42, 52, 11), B: step(41, 40, 10)},
	}}
	a, b := c.medians(func(r abRound) stepResult { return r.A }), c.medians(func(r abRound) stepResult { return r.B })
	if a.MachinesPerSec != 40 || a.APIServerCPUms != 52 || a.P50Seconds != 12 {
		t.Errorf("A's medians %+v, want 40 machines/s, 52 ms, 12 s", a)
	}
	if b.MachinesPerSec != 41 || b.APIServerCPUms != 33 || b.P50Seconds != 9 || b.ManagerCPUms != 10 {
		t.Errorf("B's medians %+v, want 41 machines/s, 33 ms, 9 s, manager 10 ms", b)
	}
	c.MedianA, c.MedianB = a, b
	md := c.markdown()
	if !strings.Contains(md, "| 2 | B | 35.0 | 33.0 | 10.0 | 9.00s / 0.00s | 7.00 |\n| 2 | A | 30.0 | 60.0 |") {
		t.Errorf("round 2 ran B first and must be listed so:\n%s", md)
	}
}
