package stack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"machineapi.dev/machine-api/manager"
	"machineapi.dev/machine-api/provider"
	"machineapi.dev/machine-api/provider/sim"
)

// Options configure a test stack.
type Options struct {
	// Provider is the provider to run; default a new sim provider with no boot delay and
	// heartbeats off.
	Provider provider.Provider
	// Manager are the manager options; default manager.DefaultOptions() with metrics and probes off.
	Manager *manager.Options
	// Clock is the controllers' clock; default the real one.
	Clock clock.WithTicker
}

// Stack is a running manager.
type Stack struct {
	Client   client.Client
	Provider provider.Provider
	// Sim is Provider when it is the simulated provider, else nil.
	Sim    *sim.Provider
	cancel context.CancelFunc
	done   chan error
}

// NewSim returns a sim provider suited to tests: Nodes register at once, no heartbeats.
func NewSim() *sim.Provider {
	p, err := sim.New(sim.Options{HeartbeatInterval: -1, Seed: 1})
	if err != nil {
		panic(err)
	}
	return p
}

// Start builds and starts the manager; it returns once the manager's caches have synced.
func Start(cfg *rest.Config, o Options) (*Stack, error) {
	if o.Provider == nil {
		o.Provider = NewSim()
	}
	mo := manager.DefaultOptions()
	if o.Manager != nil {
		mo = *o.Manager
	}
	mo.MetricsBindAddress, mo.HealthProbeBindAddress = "0", "0"
	mo.Clock = o.Clock
	mo.SkipControllerNameValidation = true
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, cfg, o.Provider, mo)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &Stack{Client: mgr.GetClient(), Provider: o.Provider, cancel: cancel, done: make(chan error, 1)}
	s.Sim, _ = o.Provider.(*sim.Provider)
	go func() { s.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		stopErr := s.Stop()
		return nil, errors.Join(errors.New("the manager's caches did not sync"), stopErr)
	}
	return s, nil
}

// Stop stops the manager and waits for it.
func (s *Stack) Stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("the manager did not stop within 60s")
	}
}
