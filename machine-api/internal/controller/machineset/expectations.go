package machineset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// expectationsTimeout is how long the controller waits for its cache to show its own writes
// before it stops waiting and trusts the cache again (a lost watch event must not block a set
// forever). Watches do not lose events in practice; this is the fallback.
const expectationsTimeout = 5 * time.Minute

// unsureCreateCheck is how long after a create whose outcome is unknown (the connection broke, the
// API server timed out) the controller asks the API server itself whether the Machine exists:
// longer than the API server's request timeout (1 minute by default), after which a create still
// in flight has either been stored or been dropped.
const unsureCreateCheck = 70 * time.Second

// expectations remembers, per MachineSet, the Machine writes this process made that its cache has
// not shown yet: Machines it created or adopted (expected to be listed as owned) and Machines it
// deleted or released (expected to be gone from the owned list, or deleting). While any is
// outstanding the set does not create or delete again, so a stale cache never makes it count the
// same gap twice (Cluster API #13649, #14217). It lives in memory: a restarted process starts with
// none, after its cache has synced — which already shows every earlier write.
type expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	sets  map[types.NamespacedName]*pending
}

type pending struct {
	uid     types.UID
	updated time.Time       // when the last write was recorded
	owned   map[string]bool // Machine name → expected in the owned list (true) or out of it (false)
	// unsure holds the Machines whose create failed without saying whether it was stored, with
	// when to ask the API server about them (see unsureCreateCheck).
	unsure map[string]time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, sets: map[types.NamespacedName]*pending{}}
}

// expect records a write about to be made: Machine name of set will be owned (present) or not.
func (e *expectations) expect(set *v1beta1.MachineSet, name string, present bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}
	p := e.sets[key]
	if p == nil || p.uid != set.UID {
		p = &pending{uid: set.UID, owned: map[string]bool{}}
		e.sets[key] = p
	}
	p.owned[name] = present
	p.updated = e.clock.Now()
}

// unsure marks the expected Machine name as created or not, nobody knows: the create failed in a
// way that does not say whether the API server stored it. It stays expected (the set acts on
// nothing until its cache shows it or the API server says it does not exist, see check).
func (e *expectations) unsure(set *v1beta1.MachineSet, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.sets[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}]
	if p == nil {
		return
	}
	if p.unsure == nil {
		p.unsure = map[string]time.Time{}
	}
	p.unsure[name] = e.clock.Now().Add(unsureCreateCheck)
}

// forget drops the expectation about name: the write failed, so the cache will not show it.
func (e *expectations) forget(set *v1beta1.MachineSet, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.sets[types.NamespacedName{Namespace: set.Namespace, Name: set.Name}]; p != nil {
		delete(p.owned, name)
		delete(p.unsure, name)
	}
}

// reset drops everything about the set named key (it is gone).
func (e *expectations) reset(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.sets, key)
}

// outstanding drops the expectations that the owned Machines (as the cache lists them, by name)
// meet, and returns what is still awaited: names expected to appear and names expected to go,
// and when the wait times out. After the timeout everything is dropped. toCheck are the unsure
// creates due to be checked with the API server; recheck is when the next one is due.
func (e *expectations) outstanding(set *v1beta1.MachineSet, owned map[string]*v1beta1.Machine) (toAppear, toGo, toCheck map[string]bool, deadline time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := types.NamespacedName{Namespace: set.Namespace, Name: set.Name}
	p := e.sets[key]
	if p == nil || p.uid != set.UID {
		delete(e.sets, key)
		return nil, nil, nil, time.Time{}
	}
	now := e.clock.Now()
	deadline = p.updated.Add(expectationsTimeout)
	if !now.Before(deadline) {
		delete(e.sets, key)
		return nil, nil, nil, time.Time{}
	}
	for name, present := range p.owned {
		m, listed := owned[name]
		met := listed
		if !present {
			met = !listed || !m.DeletionTimestamp.IsZero()
		}
		switch {
		case met:
			delete(p.owned, name)
			delete(p.unsure, name)
		case present:
			toAppear = setAdd(toAppear, name)
			if at, ok := p.unsure[name]; ok {
				if !now.Before(at) {
					toCheck = setAdd(toCheck, name)
				} else if at.Before(deadline) {
					deadline = at // come back to check it
				}
			}
		default:
			toGo = setAdd(toGo, name)
		}
	}
	if len(p.owned) == 0 {
		delete(e.sets, key)
	}
	return toAppear, toGo, toCheck, deadline
}

func setAdd(s map[string]bool, k string) map[string]bool {
	if s == nil {
		s = map[string]bool{}
	}
	s[k] = true
	return s
}
