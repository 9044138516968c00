package nodelink_test

import (
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// counter returns the value of the node linker's counter name (with the label reason when given)
// as the process exports it.
func counter(name, reason string) func() float64 {
	return func() float64 {
		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if reason == "" || len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
}
