package sim

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
	"machineapi.dev/cluster-api/provider"
)

// DefaultNetwork is the network of a Cluster whose providerSpec names none.
const DefaultNetwork = "10.0.0.0/16"

// Options configure the simulated provider.
type Options struct {
	// ProvisionDelay is how long after the first Reconcile the infrastructure becomes ready.
	ProvisionDelay time.Duration
	// DeleteDelay is how long after the first Delete the infrastructure is gone.
	DeleteDelay time.Duration
	// Clock is the time source; tests step a fake one. Default: the real clock.
	Clock clock.Clock
}

// AddFlags binds the options to command-line flags prefixed with --sim-cluster-.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&o.ProvisionDelay, "sim-cluster-provision-delay", 2*time.Second, "how long a simulated cluster's infrastructure takes to become ready")
	fs.DurationVar(&o.DeleteDelay, "sim-cluster-delete-delay", time.Second, "how long a simulated cluster's infrastructure takes to be deleted")
}

// Infrastructure is what the provider holds for one Cluster.
type Infrastructure struct {
	// UID is the Cluster's UID, the key of the record.
	UID types.UID
	// Namespace and Name are the Cluster's.
	Namespace, Name string
	// Network is the CIDR from the providerSpec.
	Network string
	// CreatedAt is the first Reconcile's time; ReadyAt when it is ready.
	CreatedAt, ReadyAt time.Time
	// DeletingSince is the first Delete's time; zero until then.
	DeletingSince time.Time
}

// Provider is the simulated cluster provider. Create one with New.
type Provider struct {
	opts Options

	mu    sync.Mutex
	infra map[types.UID]Infrastructure
}

var _ provider.Provider = &Provider{}

// New returns a simulated cluster provider.
func New(opts Options) (*Provider, error) {
	if opts.ProvisionDelay < 0 || opts.DeleteDelay < 0 {
		return nil, fmt.Errorf("sim: delays must not be negative (provision %s, delete %s)", opts.ProvisionDelay, opts.DeleteDelay)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Provider{opts: opts, infra: map[types.UID]Infrastructure{}}, nil
}

// Reconcile implements provider.Provider.
func (p *Provider) Reconcile(_ context.Context, c *v1beta1.Cluster) error {
	network, err := parseSpec(c)
	if err != nil {
		return err
	}
	now := p.opts.Clock.Now()
	p.mu.Lock()
	inf, ok := p.infra[c.UID]
	if !ok {
		inf = Infrastructure{UID: c.UID, Namespace: c.Namespace, Name: c.Name, CreatedAt: now, ReadyAt: now.Add(p.opts.ProvisionDelay)}
	}
	inf.Network = network
	p.infra[c.UID] = inf
	p.mu.Unlock()
	if wait := inf.ReadyAt.Sub(now); wait > 0 {
		return provider.RequeueAfter(wait, fmt.Sprintf("creating the simulated network %s and load balancer", network))
	}
	return nil
}

// Delete implements provider.Provider.
func (p *Provider) Delete(_ context.Context, c *v1beta1.Cluster) error {
	now := p.opts.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	inf, ok := p.infra[c.UID]
	if !ok {
		return nil
	}
	if inf.DeletingSince.IsZero() {
		inf.DeletingSince = now
		p.infra[c.UID] = inf
	}
	if wait := inf.DeletingSince.Add(p.opts.DeleteDelay).Sub(now); wait > 0 {
		return provider.RequeueAfter(wait, fmt.Sprintf("deleting the simulated network %s", inf.Network))
	}
	delete(p.infra, c.UID)
	return nil
}

// Infrastructures returns every infrastructure the provider holds, by namespace and name.
func (p *Provider) Infrastructures() []Infrastructure {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Infrastructure, 0, len(p.infra))
	for _, inf := range p.infra {
		out = append(out, inf)
	}
	slices.SortFunc(out, func(a, b Infrastructure) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}

// Get returns the infrastructure of the Cluster with this UID.
func (p *Provider) Get(uid types.UID) (Infrastructure, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	inf, ok := p.infra[uid]
	return inf, ok
}

// spec is the simulated provider's providerSpec.
type spec struct {
	Network string `json:"network,omitempty"`
}

// parseSpec reads spec.providerSpec strictly: an unknown field is a mistake the user must hear of.
func parseSpec(c *v1beta1.Cluster) (string, error) {
	s := spec{Network: DefaultNetwork}
	if ps := c.Spec.ProviderSpec; ps != nil && len(ps.Raw) > 0 {
		dec := json.NewDecoder(strings.NewReader(string(ps.Raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return "", provider.InvalidConfiguration("spec.providerSpec: %v (the simulated provider accepts only {\"network\": \"<CIDR>\"})", err)
		}
		if s.Network == "" {
			s.Network = DefaultNetwork
		}
	}
	prefix, err := netip.ParsePrefix(s.Network)
	if err != nil {
		return "", provider.InvalidConfiguration("spec.providerSpec.network %q is not a CIDR such as %s", s.Network, DefaultNetwork)
	}
	return prefix.Masked().String(), nil
}
