package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// memoryProvider keeps instances in memory, keyed by the Machine's UID as the contract asks.
type memoryProvider struct {
	mu        sync.Mutex
	instances map[string]instance // machine UID -> instance
	nextIP    int
}

// instance is what a real provider would stamp on the instance it creates: the Machine's UID,
// namespace and name (and its own identity, which one process does not need), and when.
type instance struct {
	providerID, namespace, name string
	created                     time.Time
}

var (
	_ provider.Provider = (*memoryProvider)(nil)
	_ provider.Lister   = (*memoryProvider)(nil)
)

func newProvider() *memoryProvider { return &memoryProvider{instances: map[string]instance{}} }

func (p *memoryProvider) Create(_ context.Context, m *v1beta1.Machine) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	inst, ok := p.instances[string(m.UID)]
	if !ok {
		inst = instance{providerID: "example:///" + string(m.UID), namespace: m.Namespace, name: m.Name, created: time.Now()}
		p.instances[string(m.UID)] = inst
		p.nextIP++
	}
	m.Spec.ProviderID = inst.providerID
	m.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", p.nextIP/250, p.nextIP%250+1)},
		{Type: corev1.NodeHostName, Address: m.Name},
	}
	return nil
}

func (p *memoryProvider) Update(ctx context.Context, m *v1beta1.Machine) error { return nil }

func (p *memoryProvider) Exists(_ context.Context, m *v1beta1.Machine) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.instances[string(m.UID)]
	return ok, nil
}

func (p *memoryProvider) Delete(_ context.Context, m *v1beta1.Machine) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.instances, string(m.UID))
	return nil
}

// List returns every instance, with what was stamped on it (provider.Lister: the manager's
// orphan collector finds the instances whose Machine is gone).
func (p *memoryProvider) List(context.Context) ([]provider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]provider.Instance, 0, len(p.instances))
	for uid, inst := range p.instances {
		out = append(out, provider.Instance{ProviderID: inst.providerID, MachineUID: types.UID(uid),
			MachineNamespace: inst.namespace, MachineName: inst.name, Created: inst.created})
	}
	return out, nil
}

// DeleteInstance deletes an instance whose Machine is gone.
func (p *memoryProvider) DeleteInstance(_ context.Context, inst provider.Instance) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.instances, string(inst.MachineUID))
	return nil
}
