package machinehealthcheck

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// pendingTTL bounds how long a deletion is remembered without the cache showing it.
const pendingTTL = time.Minute

// pendingDeletions remembers the Machines this controller deleted until the cache shows them being
// deleted. A pass that reads a cache lagging behind its own deletes would otherwise see those
// Machines still unhealthy and not in flight, and could start another remediation beyond
// maxInFlight (the expectations pattern of the Kubernetes controllers).
type pendingDeletions struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// add records that m was deleted at now, and forgets entries older than pendingTTL.
func (p *pendingDeletions) add(uid types.UID, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at == nil {
		p.at = map[types.UID]time.Time{}
	}
	for u, t := range p.at {
		if now.Sub(t) > pendingTTL {
			delete(p.at, u)
		}
	}
	p.at[uid] = now
}

// pending reports whether m was deleted by this controller and the cache does not show it yet.
func (p *pendingDeletions) pending(m *v1beta1.Machine, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.at[m.UID]
	if !ok {
		return false
	}
	if !m.DeletionTimestamp.IsZero() || now.Sub(t) > pendingTTL {
		delete(p.at, m.UID)
		return false
	}
	return true
}
