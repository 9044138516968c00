package main

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// memoryProvider keeps instances in memory, keyed by the Machine's UID as the contract asks.
type memoryProvider struct {
	mu        sync.Mutex
	instances map[string]string // machine UID -> providerID
	nextIP    int
}

var _ provider.Provider = (*memoryProvider)(nil)

func newProvider() *memoryProvider { return &memoryProvider{instances: map[string]string{}} }

func (p *memoryProvider) Create(_ context.Context, m *v1beta1.Machine) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.instances[string(m.UID)]
	if !ok {
		id = "example:///" + string(m.UID)
		p.instances[string(m.UID)] = id
		p.nextIP++
	}
	m.Spec.ProviderID = id
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
