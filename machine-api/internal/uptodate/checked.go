package uptodate

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

// Checked remembers which Machines of an owner (a MachineSet, a MachineDeployment) a check of
// this package found in line, and at which resourceVersion, so that a controller that checks every
// Machine of a set on every reconcile checks again only the Machines that changed since. A
// resourceVersion names one content of one object, so a Machine seen again at the same
// resourceVersion, by a pass under the same key (everything else the check reads: the owner's UID
// and generation, a MachineClass's version), is still in line. What a check found to need work is
// never remembered: it is checked again on every pass.
//
// The zero value is ready to use. Passes of different owners may run concurrently; passes of one
// owner may not (a controller never reconciles one object twice at once).
type Checked struct {
	mu     sync.Mutex
	owners map[types.NamespacedName]*checkedOwner
}

type checkedOwner struct {
	key string
	// at maps a Machine's UID to the resourceVersion it was found in line at.
	at map[types.UID]string
}

// Pass starts a pass over the Machines of owner, under key. A key other than the previous pass's
// forgets everything that pass found.
func (c *Checked) Pass(owner types.NamespacedName, key string) *Pass {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &Pass{c: c, owner: owner, key: key}
	if prev := c.owners[owner]; prev != nil && prev.key == key {
		p.prev = prev.at
		p.next = make(map[types.UID]string, len(prev.at))
	} else {
		p.next = map[types.UID]string{}
	}
	return p
}

// Forget drops what the passes of owner found: the owner is gone.
func (c *Checked) Forget(owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.owners, owner)
}

// Pass is one pass over the Machines of one owner: InLine for each Machine before checking it,
// Found for each one the check finds in line, Done at the end.
type Pass struct {
	c     *Checked
	owner types.NamespacedName
	key   string
	prev  map[types.UID]string
	next  map[types.UID]string
}

// InLine reports whether an earlier pass under the same key found m in line at its current
// resourceVersion. It then stays remembered for the next pass.
func (p *Pass) InLine(m *v1beta1.Machine) bool {
	rv, ok := p.prev[m.UID]
	if !ok || rv == "" || rv != m.ResourceVersion {
		return false
	}
	p.next[m.UID] = rv
	return true
}

// Found records that the check found m in line at its current resourceVersion.
func (p *Pass) Found(m *v1beta1.Machine) {
	if m.UID != "" && m.ResourceVersion != "" {
		p.next[m.UID] = m.ResourceVersion
	}
}

// Done keeps what this pass found (and only that: Machines it did not see are gone) for the next
// pass of its owner.
func (p *Pass) Done() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.c.owners == nil {
		p.c.owners = map[types.NamespacedName]*checkedOwner{}
	}
	p.c.owners[p.owner] = &checkedOwner{key: p.key, at: p.next}
}
