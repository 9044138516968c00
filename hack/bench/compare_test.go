package main

import "testing"

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		in                      []float64
		median, lowest, highest float64
	}{
		{"none", nil, 0, 0, 0},
		{"one", []float64{0.9}, 0.9, 0.9, 0.9},
		{"odd count takes the middle", []float64{1.2, 0.8, 0.9}, 0.9, 0.8, 1.2},
		{"even count takes the mean of the middle two", []float64{1.0, 0.7, 0.9, 1.3}, 0.95, 0.7, 1.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			median, lowest, highest := spread(tc.in)
			if median != tc.median || lowest != tc.lowest || highest != tc.highest {
				t.Errorf("spread(%v) = %v, %v, %v; want %v, %v, %v", tc.in, median, lowest, highest, tc.median, tc.lowest, tc.highest)
			}
		})
	}
}

func TestSpreadLeavesItsInputInOrder(t *testing.T) {
	in := []float64{1.2, 0.8, 0.9}
	spread(in)
	if in[0] != 1.2 || in[1] != 0.8 || in[2] != 0.9 {
		t.Errorf("spread reordered its input: %v", in)
	}
}

func TestCPUByProcess(t *testing.T) {
	c := &scaleComparison{SmallMachines: 10, Machines: 50, Rounds: []comparisonRound{
		{
			Small: stepResult{Machines: 10, CPUSeconds: map[string]float64{"kube-apiserver": 0.4, "machine-manager": 0.1}},
			Large: stepResult{Machines: 50, CPUSeconds: map[string]float64{"kube-apiserver": 2.5, "machine-manager": 0.5}},
		},
		{
			Small: stepResult{Machines: 10, CPUSeconds: map[string]float64{"kube-apiserver": 0.6, "machine-manager": 0.1}},
			Large: stepResult{Machines: 50, CPUSeconds: map[string]float64{"kube-apiserver": 3.5, "machine-manager": 1.5}},
		},
	}}
	want := "kube-apiserver 50.0 / 60.0, machine-manager 10.0 / 20.0"
	if got := c.cpuByProcess(); got != want {
		t.Errorf("cpuByProcess() = %q, want %q", got, want)
	}
}
