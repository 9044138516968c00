package faults

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"machineapi.dev/machine-api/provider/sim"
)

// ReadInstances reads every instance file in dir, the simulated provider's --sim-state-dir (one
// JSON file of a sim.Instance per Machine UID): the provider's instances right now.
func ReadInstances(dir string) (map[types.UID]sim.Instance, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]sim.Instance, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue // deleted between the glob and the read
		}
		if err != nil {
			return nil, err
		}
		var inst sim.Instance
		if err := json.Unmarshal(data, &inst); err != nil {
			continue // the provider writes atomically; a torn read is a file being replaced
		}
		out[inst.ID] = inst
	}
	return out, nil
}

// InstanceHistory samples a sim state folder several times a second and remembers every
// instance it ever saw: a Machine UID seen with two different creation times had its instance
// created twice (a duplicate the final state would not show, because the second overwrote the
// first).
type InstanceHistory struct {
	dir string

	mu       sync.Mutex
	created  map[types.UID]map[time.Time]bool
	maxPods  map[types.UID]int
	lastSeen map[types.UID]sim.Instance
}

// WatchInstances starts sampling dir until ctx ends.
func WatchInstances(ctx context.Context, dir string) *InstanceHistory {
	h := &InstanceHistory{dir: dir, created: map[types.UID]map[time.Time]bool{}, maxPods: map[types.UID]int{}, lastSeen: map[types.UID]sim.Instance{}}
	go func() {
		t := time.NewTicker(150 * time.Millisecond)
		defer t.Stop()
		for {
			h.Sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// Sample reads the folder once.
func (h *InstanceHistory) Sample() {
	insts, err := ReadInstances(h.dir)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, inst := range insts {
		if h.created[id] == nil {
			h.created[id] = map[time.Time]bool{}
		}
		h.created[id][inst.CreatedAt.UTC()] = true
		h.maxPods[id] = max(h.maxPods[id], inst.PodsRemoved)
		h.lastSeen[id] = inst
	}
}

// Recreated returns the Machine UIDs whose instance was created more than once, with how many
// creations were seen.
func (h *InstanceHistory) Recreated() map[types.UID]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[types.UID]int{}
	for id, times := range h.created {
		if len(times) > 1 {
			out[id] = len(times)
		}
	}
	return out
}

// Seen returns every instance ever sampled, as last seen.
func (h *InstanceHistory) Seen() map[types.UID]sim.Instance {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[types.UID]sim.Instance, len(h.lastSeen))
	for k, v := range h.lastSeen {
		out[k] = v
	}
	return out
}

// PodsRemoved returns the most pods the simulated kubelet ever reported finishing on the
// instance of a Machine UID.
func (h *InstanceHistory) PodsRemoved(id types.UID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxPods[id]
}

// describeUIDs formats a set of UIDs for a message, sorted.
func describeUIDs[V any](m map[types.UID]V, f func(types.UID, V) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, f(types.UID(k), m[types.UID(k)]))
	}
	return strings.Join(parts, "; ")
}
