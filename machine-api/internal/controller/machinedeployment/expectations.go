package machinedeployment

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// expectationsTimeout is how long a deployment waits for its cache to show its own MachineSet
// writes before it trusts the cache again (the fallback for a lost event).
const expectationsTimeout = 5 * time.Minute

// expectations remembers, per MachineDeployment, the MachineSet writes this process made that its
// cache does not show yet. Every write to a set is based on the cached object and made with
// optimistic locking, so the version it replaced is known: the cache shows the write once the
// set's resourceVersion is none of the versions replaced since. Created sets are expected to
// appear, deleted ones to go (or be deleting). While any write is outstanding the deployment does
// not compute another step, so it never scales a set twice for one change.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	mds   map[types.NamespacedName]*pending
}

type pending struct {
	uid     types.UID
	updated time.Time
	sets    map[string]*setExpectation
}

type setExpectation struct {
	replaced map[string]bool // resourceVersions our writes replaced
	appear   bool            // created: expect it listed
	gone     bool            // deleted: expect it not listed, or deleting
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, mds: map[types.NamespacedName]*pending{}}
}

func (e *expectations) entry(md *v1beta1.MachineDeployment, set string) *setExpectation {
	key := types.NamespacedName{Namespace: md.Namespace, Name: md.Name}
	p := e.mds[key]
	if p == nil || p.uid != md.UID {
		p = &pending{uid: md.UID, sets: map[string]*setExpectation{}}
		e.mds[key] = p
	}
	p.updated = e.clock.Now()
	x := p.sets[set]
	if x == nil {
		x = &setExpectation{replaced: map[string]bool{}}
		p.sets[set] = x
	}
	return x
}

// wrote records a successful write to set that replaced resourceVersion rv.
func (e *expectations) wrote(md *v1beta1.MachineDeployment, set, rv string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(md, set).replaced[rv] = true
}

// created records a successful create of set.
func (e *expectations) created(md *v1beta1.MachineDeployment, set string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(md, set).appear = true
}

// deleted records a successful delete of set.
func (e *expectations) deleted(md *v1beta1.MachineDeployment, set string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.entry(md, set).gone = true
}

func (e *expectations) reset(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.mds, key)
}

// outstanding drops what the cached sets (by name, deleting ones included) show and returns the
// names of the sets still awaited, with the time the wait gives up.
func (e *expectations) outstanding(md *v1beta1.MachineDeployment, cached map[string]*v1beta1.MachineSet) ([]string, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := types.NamespacedName{Namespace: md.Namespace, Name: md.Name}
	p := e.mds[key]
	if p == nil || p.uid != md.UID {
		delete(e.mds, key)
		return nil, time.Time{}
	}
	deadline := p.updated.Add(expectationsTimeout)
	if !e.clock.Now().Before(deadline) {
		delete(e.mds, key)
		return nil, time.Time{}
	}
	var waiting []string
	for name, x := range p.sets {
		set, listed := cached[name]
		var met bool
		switch {
		case x.gone:
			met = !listed || !set.DeletionTimestamp.IsZero()
		case !listed:
			met = !x.appear // a set we only updated and someone deleted is not awaited
		default:
			met = !x.replaced[set.ResourceVersion]
		}
		if met {
			delete(p.sets, name)
		} else {
			waiting = append(waiting, name)
		}
	}
	if len(p.sets) == 0 {
		delete(e.mds, key)
	}
	return waiting, deadline
}
