package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Instance is one simulated instance.
type Instance struct {
	// ID is the UID of the Machine the instance was created for.
	ID types.UID `json:"id"`
	// Namespace and Machine name the Machine, for humans and for the kubelet's knobs.
	Namespace string `json:"namespace"`
	Machine   string `json:"machine"`
	// ProviderID is sim:///<ID>.
	ProviderID string `json:"providerID"`
	// NodeName is the name the instance's Node registers with.
	NodeName     string              `json:"nodeName"`
	InternalIP   string              `json:"internalIP"`
	InstanceType string              `json:"instanceType"`
	Capacity     corev1.ResourceList `json:"capacity"`
	Kubelet      string              `json:"kubeletVersion"`
	CreatedAt    time.Time           `json:"createdAt"`
	// BootAt is when the Node registers; zero means never.
	BootAt time.Time `json:"bootAt"`
	// Registered is set once the Node was created.
	Registered bool `json:"registered"`
	// PodsRemoved counts the pods the simulated kubelet finished after they were evicted or
	// deleted, so tests can tell a drained node from one deleted with its pods.
	PodsRemoved int `json:"podsRemoved"`
	// Tags are the instance's tags (ProviderSpec.Tags), set at Create and by UpdateInPlace.
	Tags map[string]string `json:"tags,omitempty"`
	// InPlaceUpdates counts the in-place updates that changed the instance type (each one a
	// reboot), so tests can tell that a Machine was updated once, not twice or replaced.
	InPlaceUpdates int `json:"inPlaceUpdates,omitempty"`
	// RebootUntil is when the reboot of the last in-place update ends; while it is in the future
	// the instance reboots and its Node reports Ready=False. Zero: never rebooted.
	RebootUntil time.Time `json:"rebootUntil,omitzero"`
}

// rebooting reports whether the instance is rebooting at now.
func (i *Instance) rebooting(now time.Time) bool { return now.Before(i.RebootUntil) }

// store holds the instances: in memory, and, when dir is set, one JSON file per instance so that a
// restarted manager finds the instances the previous one created.
//
// With a dir, the folder is the truth: two managers sharing it (a leader and its standby) each
// keep a copy in memory, and a copy is read again whenever the folder changed in a way its own
// writes do not explain (the folder's modification time moved), so a standby that becomes
// leader knows the instances the old leader created after the standby started.
type store struct {
	dir string

	mu        sync.Mutex
	instances map[types.UID]*Instance
	nextIP    netip.Addr
	created   int       // instances ever created, for tests that check Create made no duplicate
	dirMtime  time.Time // the folder's modification time as of the last read or own write
}

var firstIP = netip.MustParseAddr("10.128.0.10")

func newStore(dir string) (*store, error) {
	s := &store{dir: dir, instances: map[types.UID]*Instance{}, nextIP: firstIP}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the sim provider's state folder: %w", err)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads every instance file of the folder, replacing the copy in memory. Callers hold mu
// (or own s alone).
func (s *store) load() error {
	st, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("reading the sim provider's state folder: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(s.dir, "*.json"))
	if err != nil {
		return err
	}
	instances := make(map[types.UID]*Instance, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted by the other manager since the glob
		}
		if err != nil {
			return err
		}
		inst := &Instance{}
		if err := json.Unmarshal(data, inst); err != nil {
			return fmt.Errorf("reading sim instance %s: %w (delete the file if it is damaged)", f, err)
		}
		instances[inst.ID] = inst
		if ip, err := netip.ParseAddr(inst.InternalIP); err == nil && !ip.Less(s.nextIP) {
			s.nextIP = ip.Next()
		}
	}
	s.instances, s.dirMtime = instances, st.ModTime()
	return nil
}

// refresh reads the folder again when something other than this store changed it. Callers hold mu.
func (s *store) refresh() {
	if s.dir == "" {
		return
	}
	st, err := os.Stat(s.dir)
	if err != nil || st.ModTime().Equal(s.dirMtime) {
		return
	}
	_ = s.load() // on a damaged file keep the copy in memory; the next change tries again
}

// lookup returns the instance for id from memory, or else from its file (written by another
// manager within the folder's timestamp granularity, which refresh cannot see). Callers hold mu.
func (s *store) lookup(id types.UID) (*Instance, bool) {
	if inst, ok := s.instances[id]; ok {
		return inst, true
	}
	if s.dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(s.file(id))
	if err != nil {
		return nil, false
	}
	inst := &Instance{}
	if json.Unmarshal(data, inst) != nil || inst.ID != id {
		return nil, false
	}
	s.instances[id] = inst
	if ip, err := netip.ParseAddr(inst.InternalIP); err == nil && !ip.Less(s.nextIP) {
		s.nextIP = ip.Next()
	}
	return inst, true
}

// wrote records the folder's modification time after one of this store's own writes. Callers hold mu.
func (s *store) wrote() {
	if st, err := os.Stat(s.dir); err == nil {
		s.dirMtime = st.ModTime()
	}
}

// get returns a copy of the instance for id.
func (s *store) get(id types.UID) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	inst, ok := s.lookup(id)
	if !ok {
		return Instance{}, false
	}
	return *inst, true
}

// getOrCreate returns the instance for id, creating it with make when there is none; created
// says which.
func (s *store) getOrCreate(id types.UID, make func(ip netip.Addr) Instance) (inst Instance, created bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	if existing, ok := s.lookup(id); ok {
		return *existing, false, nil
	}
	inst = make(s.nextIP)
	if inst.InternalIP == s.nextIP.String() {
		s.nextIP = s.nextIP.Next()
	}
	if err := s.persist(&inst); err != nil {
		return Instance{}, false, err
	}
	s.instances[id] = &inst
	s.created++
	return inst, true, nil
}

// update applies change to the instance for id and persists it.
func (s *store) update(id types.UID, change func(*Instance)) (Instance, bool, error) {
	return s.updateIf(id, func(i *Instance) bool { change(i); return true })
}

// updateIf applies change to the instance for id and persists it when change reports that it
// changed something. change decides on the current copy, under the store's lock, so two callers
// never both act on the same old state. It must replace maps it changes (Tags, Capacity), not
// write into them: the old copy shares them.
func (s *store) updateIf(id types.UID, change func(*Instance) bool) (Instance, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	inst, ok := s.lookup(id)
	if !ok {
		return Instance{}, false, nil
	}
	next := *inst
	if !change(&next) {
		return next, true, nil
	}
	if err := s.persist(&next); err != nil {
		return Instance{}, true, err
	}
	*inst = next
	return next, true, nil
}

// delete removes the instance; it reports whether there was one.
func (s *store) delete(id types.UID) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	if _, ok := s.lookup(id); !ok {
		return false, nil
	}
	if s.dir != "" {
		if err := os.Remove(s.file(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, err
		}
		s.wrote()
	}
	delete(s.instances, id)
	return true, nil
}

// list returns copies of every instance, sorted by creation.
func (s *store) list() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	out := make([]Instance, 0, len(s.instances))
	for _, inst := range s.instances {
		out = append(out, *inst)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func (s *store) file(id types.UID) string { return filepath.Join(s.dir, string(id)+".json") }

// persist writes the instance atomically (write, then rename). Callers hold mu.
func (s *store) persist(inst *Instance) error {
	if s.dir == "" {
		return nil
	}
	data, err := json.MarshalIndent(inst, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.file(inst.ID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("saving sim instance: %w", err)
	}
	if err := os.Rename(tmp, s.file(inst.ID)); err != nil {
		return fmt.Errorf("saving sim instance: %w", err)
	}
	s.wrote()
	return nil
}
