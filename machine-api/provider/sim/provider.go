package sim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// ProviderIDPrefix starts every providerID of this provider.
const ProviderIDPrefix = "sim:///"

const (
	// defaultHeartbeatInterval is a kubelet's Lease renewal interval (a quarter of its 40s lease).
	defaultHeartbeatInterval = 10 * time.Second
	// nodeStatusReportInterval is how often an unchanged Ready condition's heartbeat is renewed
	// (a kubelet's nodeStatusReportFrequency).
	nodeStatusReportInterval = 5 * time.Minute
	// defaultRebootDuration is how long the reboot of an in-place instance-type change lasts.
	defaultRebootDuration = 3 * time.Second
)

// Options configure the simulated provider.
type Options struct {
	// BootDelay is how long after Create an instance's Node registers.
	BootDelay time.Duration
	// RebootDuration is how long the reboot of an in-place instance-type change lasts (see
	// UpdateInPlace); its Node reports Ready=False meanwhile. 0 means 3s; negative means the
	// instance is back at once. RebootDurationAnnotation overrides it per Machine.
	RebootDuration time.Duration
	// StateDir, when set, keeps one JSON file per instance there, so instances survive restarts.
	StateDir string
	// HeartbeatInterval is how often the simulated kubelet renews each served Node's Lease in
	// kube-node-lease, as a kubelet does every 10s so that the node lifecycle controller of
	// kube-controller-manager (node-monitor-grace-period, 50s by default) keeps the Node Ready.
	// The Ready condition's heartbeat is renewed every nodeStatusReportInterval, as a kubelet
	// reports an unchanged status. 0 means 10s; negative turns both off (the Ready condition still
	// changes): then run kube-controller-manager without its nodelifecycle controller, or it marks
	// every Node unreachable.
	HeartbeatInterval time.Duration
	// LeaveConditionTaints stops the simulated kubelet from keeping the node.kubernetes.io/not-ready
	// and unreachable NoSchedule taints in line with the Ready condition, which is the job of
	// kube-controller-manager's node lifecycle controller: set it when that controller runs (make
	// run, the fault matrix), so the taints are the real controller's.
	LeaveConditionTaints bool
	// CreateFailureRate is the fraction of Create calls that fail with a transient error.
	CreateFailureRate float64
	// CallFailureRate is the fraction of Exists, Update and Delete calls that fail transiently.
	CallFailureRate float64
	// SlowCreateRate is the fraction of Create calls that take SlowCreateDelay before answering.
	SlowCreateRate  float64
	SlowCreateDelay time.Duration
	// KubeletVersion is the version Nodes report when the Machine names none. Default v1.37.2.
	KubeletVersion string
	// Clock is the time source; tests step a fake one. Default: the real clock.
	Clock clock.WithTicker
	// Seed seeds the fault-injection randomness; 0 picks one.
	Seed uint64
}

// AddFlags binds the options to command-line flags prefixed with --sim-.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.BootDelay, "sim-boot-delay", 2*time.Second, "how long a simulated instance takes to register its Node")
	fs.DurationVar(&o.RebootDuration, "sim-reboot-duration", defaultRebootDuration, "how long a simulated instance reboots for an in-place instance type change (negative: back at once)")
	fs.StringVar(&o.StateDir, "sim-state-dir", "", "folder keeping the simulated instances across restarts (empty: in memory)")
	fs.DurationVar(&o.HeartbeatInterval, "sim-heartbeat-interval", defaultHeartbeatInterval, "how often simulated kubelets renew their Node's Lease (negative: no Lease or status heartbeats; then run kube-controller-manager without nodelifecycle)")
	fs.BoolVar(&o.LeaveConditionTaints, "sim-leave-condition-taints", false, "leave the not-ready/unreachable NoSchedule taints to kube-controller-manager's node lifecycle controller (set it when that controller runs)")
	fs.Float64Var(&o.CreateFailureRate, "sim-create-failure-rate", 0, "fraction of Create calls that fail with a transient error")
	fs.Float64Var(&o.CallFailureRate, "sim-call-failure-rate", 0, "fraction of Exists, Update and Delete calls that fail with a transient error")
	fs.Float64Var(&o.SlowCreateRate, "sim-slow-create-rate", 0, "fraction of Create calls that are slow")
	fs.DurationVar(&o.SlowCreateDelay, "sim-slow-create-delay", 5*time.Second, "how long a slow Create takes")
}

// Provider is the simulated provider. Create one with New; give it a client with
// SetupWithManager (which also starts its kubelet) or WithClient.
type Provider struct {
	opts  Options
	store *store

	mu     sync.Mutex
	client client.Client
	leases map[string]time.Time // when this provider last renewed each Node's Lease
	rng    *rand.Rand
	wake   chan struct{}
	// notify and timers: see interruption.go.
	notify func(namespace, name string)
	timers map[timerKey]bool
}

var _ provider.Provider = &Provider{}

// New returns a simulated provider.
func New(opts Options) (*Provider, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = defaultHeartbeatInterval
	}
	if opts.RebootDuration == 0 {
		opts.RebootDuration = defaultRebootDuration
	}
	if opts.KubeletVersion == "" {
		opts.KubeletVersion = "v1.37.2"
	}
	for name, rate := range map[string]float64{"create failure": opts.CreateFailureRate, "call failure": opts.CallFailureRate, "slow create": opts.SlowCreateRate} {
		if rate < 0 || rate > 1 {
			return nil, fmt.Errorf("sim: the %s rate must be between 0 and 1, got %v", name, rate)
		}
	}
	st, err := newStore(opts.StateDir)
	if err != nil {
		return nil, err
	}
	seed := opts.Seed
	if seed == 0 {
		seed = uint64(opts.Clock.Now().UnixNano())
	}
	return &Provider{opts: opts, store: st, rng: rand.New(rand.NewPCG(seed, seed>>1)), wake: make(chan struct{}, 1)}, nil
}

// WithClient gives the provider the client it registers Nodes with, for use without a manager.
func (p *Provider) WithClient(c client.Client) *Provider {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client = c
	return p
}

func (p *Provider) getClient() client.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client
}

// Instances returns every instance the provider holds, oldest first.
func (p *Provider) Instances() []Instance { return p.store.list() }

// CreatedInstances is how many instances this provider object ever created (not found again).
func (p *Provider) CreatedInstances() int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.created
}

// Create implements provider.Provider.
func (p *Provider) Create(ctx context.Context, m *v1beta1.Machine) error {
	if msg, ok := m.Annotations[FailCreateAnnotation]; ok {
		return provider.InvalidConfiguration("%s (the %s annotation asked for this failure)", msg, FailCreateAnnotation)
	}
	spec, err := parseSpec(m)
	if err != nil {
		return err
	}
	bootDelay, err := p.bootDelay(m)
	if err != nil {
		return err
	}
	if p.chance(p.opts.CreateFailureRate) {
		return errors.New("sim: simulated transient failure while creating the instance (--sim-create-failure-rate)")
	}
	if p.chance(p.opts.SlowCreateRate) {
		select {
		case <-p.opts.Clock.After(p.opts.SlowCreateDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	now := p.opts.Clock.Now()
	inst, _, err := p.store.getOrCreate(m.UID, func(next netip.Addr) Instance {
		inst := Instance{
			ID:           m.UID,
			Namespace:    m.Namespace,
			Machine:      m.Name,
			ProviderID:   ProviderIDPrefix + string(m.UID),
			NodeName:     provider.NodeName(m),
			InternalIP:   next.String(),
			InstanceType: spec.InstanceType,
			Tags:         maps.Clone(spec.Tags),
			Capacity:     capacity(provider.MachineClassFrom(ctx), spec),
			Kubelet:      p.opts.KubeletVersion,
			CreatedAt:    now,
		}
		if ip := m.Annotations[InternalIPAnnotation]; ip != "" {
			inst.InternalIP = ip
		}
		if m.Spec.Versions != nil && m.Spec.Versions.Kubelet != "" {
			inst.Kubelet = m.Spec.Versions.Kubelet
		}
		if _, never := m.Annotations[NeverBootAnnotation]; !never {
			inst.BootAt = now.Add(bootDelay)
		}
		return inst
	})
	if err != nil {
		return fmt.Errorf("sim: recording the instance: %w", err)
	}
	if !inst.Registered && !inst.BootAt.IsZero() {
		if !inst.BootAt.After(now) {
			if err := p.register(ctx, inst); err != nil {
				return err
			}
			inst.Registered = true
		} else {
			p.kickBooter()
		}
	}
	describe(m, inst, now)
	return nil
}

// Update implements provider.Provider: it refreshes the Machine's addresses and provider status.
func (p *Provider) Update(_ context.Context, m *v1beta1.Machine) error {
	if p.chance(p.opts.CallFailureRate) {
		return errors.New("sim: simulated transient failure while updating the instance (--sim-call-failure-rate)")
	}
	if inst, ok := p.store.get(m.UID); ok {
		describe(m, inst, p.opts.Clock.Now())
	}
	return nil
}

// Exists implements provider.Provider. The vanish knob, and a reclaim whose time has come
// (interruption.go), delete the instance first.
func (p *Provider) Exists(_ context.Context, m *v1beta1.Machine) (bool, error) {
	if p.chance(p.opts.CallFailureRate) {
		return false, errors.New("sim: simulated transient failure while looking up the instance (--sim-call-failure-rate)")
	}
	if _, vanish := m.Annotations[VanishAnnotation]; vanish || p.reclaimed(m) {
		if _, err := p.store.delete(m.UID); err != nil {
			return false, err
		}
	}
	_, ok := p.store.get(m.UID)
	return ok, nil
}

// Delete implements provider.Provider.
func (p *Provider) Delete(ctx context.Context, m *v1beta1.Machine) error {
	if p.chance(p.opts.CallFailureRate) {
		return errors.New("sim: simulated transient failure while deleting the instance (--sim-call-failure-rate)")
	}
	inst, had := p.store.get(m.UID)
	if _, err := p.store.delete(m.UID); err != nil {
		return err
	}
	// A Node the Machine was never linked to is not the machine controller's to delete: remove it
	// with its instance, as a cloud's node lifecycle controller would.
	if had && inst.Registered && m.Status.NodeRef == nil && p.getClient() != nil {
		return p.removeNode(ctx, inst.NodeName)
	}
	return nil
}

func (p *Provider) bootDelay(m *v1beta1.Machine) (time.Duration, error) {
	v, ok := m.Annotations[BootDelayAnnotation]
	if !ok {
		return p.opts.BootDelay, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, provider.InvalidConfiguration("annotation %s=%q is not a duration such as 30s", BootDelayAnnotation, v)
	}
	return d, nil
}

func (p *Provider) chance(rate float64) bool {
	if rate <= 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64() < rate
}

// describe writes what the provider knows about inst at now onto the Machine.
func describe(m *v1beta1.Machine, inst Instance, now time.Time) {
	m.Spec.ProviderID = inst.ProviderID
	m.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: inst.InternalIP},
		{Type: corev1.NodeHostName, Address: inst.NodeName},
	}
	state := "booting"
	switch {
	case inst.Registered && inst.rebooting(now):
		state = "rebooting"
	case inst.Registered:
		state = "running"
	case inst.BootAt.IsZero():
		state = "stuck"
	}
	raw, _ := json.Marshal(map[string]string{"instanceID": string(inst.ID), "instanceType": inst.InstanceType, "state": state})
	m.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
}

var _ provider.Lister = (*Provider)(nil)

// List implements provider.Lister: every instance of the store (a manager's sim keeps only its
// own, in its own state folder).
func (p *Provider) List(_ context.Context) ([]provider.Instance, error) {
	if p.chance(p.opts.CallFailureRate) {
		return nil, errors.New("sim: simulated transient failure while listing the instances (--sim-call-failure-rate)")
	}
	all := p.store.list()
	out := make([]provider.Instance, 0, len(all))
	for _, inst := range all {
		out = append(out, provider.Instance{
			ProviderID: inst.ProviderID, MachineUID: inst.ID, MachineNamespace: inst.Namespace, MachineName: inst.Machine, Created: inst.CreatedAt,
		})
	}
	return out, nil
}

// DeleteInstance implements provider.Lister: the instance goes, and its Node with it, as a
// cloud's node lifecycle controller would remove the Node of a terminated instance that no
// Machine deletes.
func (p *Provider) DeleteInstance(ctx context.Context, i provider.Instance) error {
	inst, had := p.store.get(i.MachineUID)
	if _, err := p.store.delete(i.MachineUID); err != nil {
		return err
	}
	if had && inst.Registered && p.getClient() != nil {
		return p.removeNode(ctx, inst.NodeName)
	}
	return nil
}
