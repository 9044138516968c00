package libvirtprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/bootstrap"
	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// ProviderIDPrefix starts every providerID of this provider: libvirt:///<machine-uid>.
const ProviderIDPrefix = "libvirt:///"

// consoleLogDir is where the guests' serial consoles are logged on the libvirt host, beside
// libvirt's own logs of each domain.
const consoleLogDir = "/var/log/libvirt/qemu"

// Provider is the libvirt provider. Create one with New; give it the cluster with
// SetupWithManager (the manager calls it) or WithCluster.
type Provider struct {
	opts  Options
	hosts hosts

	mu      sync.Mutex
	cluster *cluster
}

// cluster is what the provider needs from the cluster its Machines join.
type cluster struct {
	client   client.Client // uncached: bootstrap token Secrets
	config   *rest.Config
	ca       []byte
	recorder events.EventRecorder // nil without a manager
}

var _ provider.Provider = &Provider{}

// New returns a libvirt provider.
func New(o Options) *Provider {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ManagerID == "" {
		o.ManagerID = DefaultOptions().ManagerID
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = bootstrap.DefaultTokenTTL
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	return &Provider{opts: o}
}

// SetupWithManager gives the provider the cluster the manager runs against: a client that reads
// bootstrap token Secrets from the API server (the manager's cached client would watch every
// Secret), its configuration and an event recorder.
func (p *Provider) SetupWithManager(mgr ctrl.Manager) error {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("libvirt provider: building its client: %w", err)
	}
	return p.setCluster(c, mgr.GetConfig(), mgr.GetEventRecorder("libvirt-provider"))
}

// WithCluster gives the provider a client and the client configuration of the cluster its
// Machines join, for use without a manager (tests).
func (p *Provider) WithCluster(c client.Client, cfg *rest.Config) (*Provider, error) {
	return p, p.setCluster(c, cfg, nil)
}

func (p *Provider) setCluster(c client.Client, cfg *rest.Config, rec events.EventRecorder) error {
	var ca []byte
	var err error
	if p.opts.CAFile != "" {
		ca, err = os.ReadFile(p.opts.CAFile)
	} else {
		ca, err = bootstrap.CAData(cfg)
	}
	if err != nil {
		return fmt.Errorf("libvirt provider: the CA guests verify the API server with (--libvirt-ca-file): %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cluster = &cluster{client: c, config: cfg, ca: ca, recorder: rec}
	return nil
}

func (p *Provider) getCluster() (*cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cluster == nil {
		return nil, errors.New("libvirt provider: no cluster client yet (SetupWithManager has not run)")
	}
	return p.cluster, nil
}

// Create implements provider.Provider: see the package documentation.
func (p *Provider) Create(ctx context.Context, m *v1beta1.Machine) error {
	spec, err := parseSpec(m)
	if err != nil {
		return err
	}
	if _, err := domainUUID(m.UID); err != nil {
		return provider.InvalidConfiguration("%v: the provider names the domain by it", err)
	}
	cl, err := p.getCluster()
	if err != nil {
		return err
	}
	h := p.hosts.get(spec.URI)
	conn, err := h.connect()
	if err != nil {
		return err
	}
	dom, found, err := lookup(conn, m.UID)
	if err != nil {
		return onHost(spec.URI, err)
	}
	if found {
		return onHost(spec.URI, p.adopt(ctx, m, spec, cl, conn, dom))
	}
	pl, err := checkHost(conn, spec.URI, spec)
	if err != nil {
		return onHost(spec.URI, err)
	}
	if pl.endpoint, err = guestEndpoint(spec, cl.config, p.opts.APIServerURL); err != nil {
		return err
	}
	dom, meta, err := p.define(h, conn, m, spec, pl)
	if err != nil {
		return onHost(spec.URI, err)
	}
	log.FromContext(ctx).Info("defined libvirt domain", "domain", dom.Name, "uri", spec.URI, "domainType", pl.domainType, "why", pl.reason)
	if cl.recorder != nil {
		cl.recorder.Eventf(m, nil, corev1.EventTypeNormal, "DomainDefined", "Create", "defined libvirt domain %s on %s, type %s (%s)", dom.Name, spec.URI, pl.domainType, pl.reason)
	}
	if err := p.complete(ctx, m, spec, cl, conn, dom, pl, meta.UserNetworkIndex); err != nil {
		if terr := p.teardown(ctx, cl, conn, dom, true, spec.StoragePool, m); terr != nil {
			err = fmt.Errorf("%w; cleaning up after it: %w", err, terr)
		}
		return onHost(spec.URI, err)
	}
	return onHost(spec.URI, p.describe(ctx, m, conn, dom, spec.URI))
}

// define chooses the user-network subnet, if any, and defines the domain that records it, as one
// step for this process.
func (p *Provider) define(h *host, conn *libvirt.Libvirt, m *v1beta1.Machine, spec api.ProviderSpec, pl plan) (libvirt.Domain, metadata, error) {
	uuid, _ := domainUUID(m.UID)
	meta := metadata{
		Namespace: m.Namespace, Name: m.Name, UID: string(m.UID), Manager: p.opts.ManagerID,
		Pool: spec.StoragePool, DomainTypeReason: pl.reason, Created: p.opts.Clock.Now().UTC().Format(time.RFC3339),
	}
	name := domainName(m)
	params := domainParams{
		Name: name, UUID: formatUUID(uuid), Title: fmt.Sprintf("Machine %s/%s", m.Namespace, m.Name),
		Type: pl.domainType, VCPUs: spec.VCPUs, MemoryMiB: spec.MemoryMiB(),
		Pool: spec.StoragePool, Disk: diskVolume(m.UID), Seed: seedVolume(m.UID), MAC: macAddress(uuid),
		Network: spec.Network.Network, Bridge: spec.Network.Bridge,
		ConsoleLog: consoleLogDir + "/" + name + "-console.log",
	}
	h.define.Lock()
	defer h.define.Unlock()
	if spec.Network.UserLoopback != nil {
		used, err := usedIndexes(conn, p.opts.ManagerID)
		if err != nil {
			return libvirt.Domain{}, meta, err
		}
		index, ok := allocateIndex(used, m.UID)
		if !ok {
			return libvirt.Domain{}, meta, fmt.Errorf("every user-network subnet 10.0.%d-%d.0/24 is taken by domains of manager %s: delete Machines, or run them on another host", firstIndex, lastIndex, p.opts.ManagerID)
		}
		meta.UserNetworkIndex = index
		params.UserNet = &userNet{Index: index, ForwardTo: pl.endpoint.forwardTo}
	}
	params.Meta = meta
	data, err := renderDomain(params)
	if err != nil {
		return libvirt.Domain{}, meta, err
	}
	dom, err := conn.DomainDefineXMLFlags(string(data), libvirt.DomainDefineValidate)
	if err != nil {
		return libvirt.Domain{}, meta, fmt.Errorf("defining domain %s: %w", name, err)
	}
	return dom, meta, nil
}

// complete gives a defined domain what it boots with — the bootstrap token, the seed, the disk
// overlay — and starts it.
func (p *Provider) complete(ctx context.Context, m *v1beta1.Machine, spec api.ProviderSpec, cl *cluster, conn *libvirt.Libvirt, dom libvirt.Domain, pl plan, index int32) error {
	token, err := bootstrap.EnsureToken(ctx, cl.client, m, bootstrap.TokenOptions{TTL: p.opts.TokenTTL, Clock: p.opts.Clock})
	if err != nil {
		return err
	}
	in := seedInput{
		Hostname:           provider.NodeName(m),
		ProviderID:         ProviderIDPrefix + string(m.UID),
		CAData:             cl.ca,
		RegisterWithTaints: registerWithTaints(p.opts.InitializationTaintKey, spec.RegisterWithTaints),
	}
	server := pl.endpoint.server
	if spec.Network.UserLoopback != nil {
		if index == 0 {
			return fmt.Errorf("domain %s records no user-network subnet", dom.Name)
		}
		u := userNet{Index: index}
		server, in.NodeIP, in.StaticAddress, in.Gateway = u.APIServer(), u.GuestIP(), u.GuestIP()+"/24", u.Gateway()
	}
	if in.BootstrapKubeconfig, err = bootstrap.Kubeconfig(bootstrap.KubeconfigOptions{
		Server: server, CAData: cl.ca, TLSServerName: pl.endpoint.tlsServerName, Token: token,
	}); err != nil {
		return err
	}
	if in.Kubeconfig, err = kubeletKubeconfig(server, cl.ca, pl.endpoint.tlsServerName); err != nil {
		return err
	}
	files, err := seedFiles(in)
	if err != nil {
		return err
	}
	seed, err := writeSeed(files, p.opts.Clock.Now())
	if err != nil {
		return err
	}
	if err := createSeed(conn, pl.pool, seedVolume(m.UID), seed); err != nil {
		return err
	}
	if err := createOverlay(conn, pl.pool, diskVolume(m.UID), pl.diskSize, pl.base); err != nil {
		return err
	}
	if err := conn.DomainCreate(dom); err != nil {
		return fmt.Errorf("starting domain %s: %w", dom.Name, err)
	}
	return nil
}

// registerWithTaints are the taints a Node registers with: the initialization taint (NoSchedule)
// when its key is set, then the providerSpec's, one per key and effect.
func registerWithTaints(initKey string, spec []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	if initKey != "" {
		out = append(out, corev1.Taint{Key: initKey, Effect: corev1.TaintEffectNoSchedule})
	}
	for _, t := range spec {
		if !slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }) {
			out = append(out, t)
		}
	}
	return out
}

// adopt handles a domain found for the Machine: one an interrupted Create defined but never
// started (the Machine has no providerID yet) is completed; any other is described as it is.
func (p *Provider) adopt(ctx context.Context, m *v1beta1.Machine, spec api.ProviderSpec, cl *cluster, conn *libvirt.Libvirt, dom libvirt.Domain) error {
	state, _, err := conn.DomainGetState(dom, 0)
	if err != nil {
		return fmt.Errorf("reading the state of domain %s: %w", dom.Name, err)
	}
	if m.Spec.ProviderID == "" && state == stateShutoff {
		data, err := conn.DomainGetXMLDesc(dom, 0)
		if err != nil {
			return fmt.Errorf("reading domain %s: %w", dom.Name, err)
		}
		r, err := readDomain(data)
		if err != nil {
			return err
		}
		if r.Metadata.Machine == nil || r.Metadata.Machine.UID != string(m.UID) {
			return fmt.Errorf("domain %s has the UUID of machine %s/%s but not the provider's metadata: it was not defined by this provider; remove it or the Machine", dom.Name, m.Namespace, m.Name)
		}
		pl, err := checkHost(conn, spec.URI, spec)
		if err != nil {
			return err
		}
		if pl.endpoint, err = guestEndpoint(spec, cl.config, p.opts.APIServerURL); err != nil {
			return err
		}
		log.FromContext(ctx).Info("completing libvirt domain an interrupted Create left unstarted", "domain", dom.Name)
		if err := p.complete(ctx, m, spec, cl, conn, dom, pl, r.Metadata.Machine.UserNetworkIndex); err != nil {
			if terr := p.teardown(ctx, cl, conn, dom, true, spec.StoragePool, m); terr != nil {
				err = fmt.Errorf("%w; cleaning up after it: %w", err, terr)
			}
			return err
		}
	}
	return p.describe(ctx, m, conn, dom, spec.URI)
}

// Update implements provider.Provider: it refreshes the addresses and the provider status, and
// completes a domain an interrupted Create left unstarted.
func (p *Provider) Update(ctx context.Context, m *v1beta1.Machine) error {
	uri, _ := locateSpec(m)
	conn, err := p.hosts.get(uri).connect()
	if err != nil {
		return err
	}
	dom, found, err := lookup(conn, m.UID)
	if err != nil || !found {
		return onHost(uri, err) // a missing domain is for Exists to report
	}
	if m.Spec.ProviderID == "" {
		spec, err := parseSpec(m)
		if err != nil {
			return err
		}
		cl, err := p.getCluster()
		if err != nil {
			return err
		}
		return onHost(uri, p.adopt(ctx, m, spec, cl, conn, dom))
	}
	return onHost(uri, p.describe(ctx, m, conn, dom, uri))
}

// Exists implements provider.Provider: the domain with the Machine's UID as UUID exists.
func (p *Provider) Exists(ctx context.Context, m *v1beta1.Machine) (bool, error) {
	uri, _ := locateSpec(m)
	conn, err := p.hosts.get(uri).connect()
	if err != nil {
		if isUnreachable(err) && m.Spec.ProviderID == "" {
			// Nothing of this Machine was ever recorded as made: Create reports the host.
			log.FromContext(ctx).V(1).Info("libvirt host unreachable; the Machine has no providerID, so no domain is looked for", "uri", uri, "error", err.Error())
			return false, nil
		}
		return false, err
	}
	_, found, err := lookup(conn, m.UID)
	return found, onHost(uri, err)
}

// Delete implements provider.Provider: see teardown.
func (p *Provider) Delete(ctx context.Context, m *v1beta1.Machine) error {
	uri, pool := locateSpec(m)
	conn, err := p.hosts.get(uri).connect()
	if err != nil {
		if isUnreachable(err) && m.Spec.ProviderID == "" {
			return nil // as Exists
		}
		return err
	}
	cl, err := p.getCluster()
	if err != nil {
		return err
	}
	dom, found, err := lookup(conn, m.UID)
	if err != nil {
		return onHost(uri, err)
	}
	if found {
		if data, err := conn.DomainGetXMLDesc(dom, 0); err == nil {
			if r, err := readDomain(data); err == nil && r.Metadata.Machine != nil && r.Metadata.Machine.Pool != "" {
				pool = r.Metadata.Machine.Pool
			}
		}
	}
	if err := p.teardown(ctx, cl, conn, dom, found, pool, m); err != nil {
		return onHost(uri, err)
	}
	if found {
		log.FromContext(ctx).Info("deleted libvirt domain", "domain", dom.Name, "uri", uri)
	}
	return nil
}

// teardown removes what a Machine has on the host and in the cluster: it destroys the domain,
// revokes the Machine's bootstrap tokens, deletes its volumes and undefines the domain last, so
// that a failure on the way leaves the domain for Exists to find and Delete to try again.
func (p *Provider) teardown(ctx context.Context, cl *cluster, conn *libvirt.Libvirt, dom libvirt.Domain, haveDomain bool, poolName string, m *v1beta1.Machine) error {
	var errs []error
	if haveDomain {
		if err := conn.DomainDestroy(dom); err != nil && !libvirtCode(err, libvirt.ErrOperationInvalid) && !libvirtCode(err, libvirt.ErrNoDomain) {
			return fmt.Errorf("destroying domain %s: %w", dom.Name, err)
		}
	}
	if err := bootstrap.RevokeTokens(ctx, cl.client, m.UID); err != nil {
		errs = append(errs, err)
	}
	if pl, found, err := pool(conn, poolName); err != nil {
		errs = append(errs, err)
	} else if found {
		for _, name := range []string{diskVolume(m.UID), seedVolume(m.UID)} {
			if err := deleteVolume(conn, pl, name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if haveDomain {
		flags := libvirt.DomainUndefineManagedSave | libvirt.DomainUndefineSnapshotsMetadata | libvirt.DomainUndefineNvram | libvirt.DomainUndefineCheckpointsMetadata
		if err := conn.DomainUndefineFlags(dom, flags); err != nil && !libvirtCode(err, libvirt.ErrNoDomain) {
			return fmt.Errorf("undefining domain %s: %w", dom.Name, err)
		}
	}
	return nil
}

// describe records what the provider knows of the domain on the Machine: providerID, addresses and
// provider status.
func (p *Provider) describe(ctx context.Context, m *v1beta1.Machine, conn *libvirt.Libvirt, dom libvirt.Domain, uri string) error {
	data, err := conn.DomainGetXMLDesc(dom, 0)
	if err != nil {
		return fmt.Errorf("reading domain %s: %w", dom.Name, err)
	}
	r, err := readDomain(data)
	if err != nil {
		return err
	}
	state, _, err := conn.DomainGetState(dom, 0)
	if err != nil {
		return fmt.Errorf("reading the state of domain %s: %w", dom.Name, err)
	}
	status := api.ProviderStatus{URI: statusURI(uri), DomainName: r.Name, DomainType: api.DomainType(r.Type), State: stateName(state)}
	internalIP := ""
	if meta := r.Metadata.Machine; meta != nil {
		status.DomainTypeReason = meta.DomainTypeReason
		status.UserNetworkIndex = meta.UserNetworkIndex
		if meta.UserNetworkIndex != 0 {
			internalIP = userNet{Index: meta.UserNetworkIndex}.GuestIP()
		}
	}
	if internalIP == "" && state == stateRunning {
		internalIP = leasedAddress(ctx, conn, dom)
	}
	if internalIP == "" { // keep what an earlier call learned
		for _, a := range m.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internalIP = a.Address
			}
		}
	}
	m.Spec.ProviderID = ProviderIDPrefix + string(m.UID)
	m.Status.Addresses = nil
	if internalIP != "" {
		m.Status.Addresses = append(m.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: internalIP})
	}
	m.Status.Addresses = append(m.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: provider.NodeName(m)})
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	m.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
	return nil
}

// leasedAddress is the guest's first IPv4 address as libvirt sees it: from a libvirt network's
// DHCP leases, else from the host's ARP table (a bridge). Empty when neither knows it yet.
func leasedAddress(ctx context.Context, conn *libvirt.Libvirt, dom libvirt.Domain) string {
	for _, source := range []libvirt.DomainInterfaceAddressesSource{libvirt.DomainInterfaceAddressesSrcLease, libvirt.DomainInterfaceAddressesSrcArp} {
		ifaces, err := conn.DomainInterfaceAddresses(dom, uint32(source), 0)
		if err != nil {
			log.FromContext(ctx).V(1).Info("reading the guest's addresses", "domain", dom.Name, "source", source, "error", err.Error())
			continue
		}
		for _, iface := range ifaces {
			for _, a := range iface.Addrs {
				if a.Type == int32(libvirt.IPAddrTypeIpv4) {
					return a.Addr
				}
			}
		}
	}
	return ""
}

// statusURI is the URI as recorded in status.providerStatus: without a password, if it has one.
func statusURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	if _, has := u.User.Password(); has {
		return ""
	}
	return uri
}

// onHost names the libvirt host in an error that does not already.
func onHost(uri string, err error) error {
	if err == nil || isUnreachable(err) || provider.IsInvalidConfiguration(err) {
		return err
	}
	return fmt.Errorf("libvirt %s: %w", statusURI(uri), err)
}

// domainName is the domain's name on the host: the Machine's namespace and its Node's name.
func domainName(m *v1beta1.Machine) string { return m.Namespace + "." + provider.NodeName(m) }
