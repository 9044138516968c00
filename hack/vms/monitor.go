package vms

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Monitor samples, every interval for the whole suite, the running domains of the suite's manager
// and the Machines of its namespace: how many VMs were ever alive at once (the suite allows two on
// a 2-core host), and the UID of every Machine, whose volumes must all be gone in the end.
type Monitor struct {
	mu       sync.Mutex
	most     int
	mostAt   time.Time
	mostWhat []string
	uids     map[types.UID]string
	errs     int
	lastErr  error
}

// StartMonitor starts sampling until ctx ends.
func StartMonitor(ctx context.Context, host *Host, manager string, k8s client.Client, namespace string, interval time.Duration) *Monitor {
	m := &Monitor{uids: map[types.UID]string{}}
	go func() {
		for {
			m.sample(ctx, host, manager, k8s, namespace)
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return m
}

func (m *Monitor) sample(ctx context.Context, host *Host, manager string, k8s client.Client, namespace string) {
	doms, err := host.Domains(manager)
	var machines v1beta1.MachineList
	if err == nil {
		err = k8s.List(ctx, &machines, client.InNamespace(namespace))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			m.errs++
			m.lastErr = err
		}
		return
	}
	var running []string
	for _, d := range doms {
		m.uids[types.UID(d.MachineUID)] = d.MachineName
		if d.Running {
			running = append(running, d.Name)
		}
	}
	for _, mc := range machines.Items {
		m.uids[mc.UID] = mc.Name
	}
	if len(running) > m.most {
		m.most, m.mostAt, m.mostWhat = len(running), time.Now(), running
	}
}

// MostAlive returns the most domains seen running at once, and a description of when.
func (m *Monitor) MostAlive() (int, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.most, fmt.Sprintf("%d at %s: %v", m.most, m.mostAt.Format(time.TimeOnly), m.mostWhat)
}

// MachineUIDs returns the UID of every Machine and domain seen.
func (m *Monitor) MachineUIDs() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]types.UID, 0, len(m.uids))
	for uid := range m.uids {
		if uid != "" {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}

// Errors returns how many samples failed, and the last error.
func (m *Monitor) Errors() (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errs, m.lastErr
}
