package libvirtprovider

import (
	"context"
	"encoding/xml"
	"fmt"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

// restartPoll is how often a restart for an in-place update looks again while the guest powers
// off.
const restartPoll = 5 * time.Second

// restartMetadataKey is the XML namespace prefix of the restart mark.
const restartMetadataKey = "machineapi-restart"

var _ provider.InPlaceUpdater = (*Provider)(nil)

// CanUpdateInPlace implements provider.InPlaceUpdater. It validates desired's providerSpec as
// Create does and compares it with the Machine's domain as it is (instanceSpec), not with m's
// spec: a new memory size or vCPU count is applied in place, with a restart of the domain
// (Disruptive); any other field that differs (the host, the image, the disk, the pool, the domain
// type, the network, the taints the seed registers) needs a new Machine (Unsupported).
func (p *Provider) CanUpdateInPlace(ctx context.Context, m, desired *v1beta1.Machine) (provider.InPlacePlan, error) {
	if _, err := parseSpec(desired); err != nil {
		return provider.InPlacePlan{}, err
	}
	uri, _ := locateSpec(m)
	conn, err := p.hosts.get(uri).connect()
	if err != nil {
		return provider.InPlacePlan{}, err
	}
	dom, err := p.domainOf(conn, m)
	if err != nil {
		return provider.InPlacePlan{}, onHost(uri, err)
	}
	d, err := readDomainXML(conn, dom, 0) // the running domain's, or the definition of one shut off
	if err != nil {
		return provider.InPlacePlan{}, onHost(uri, err)
	}
	caps, err := conn.ConnectGetCapabilities()
	if err != nil {
		return provider.InPlacePlan{}, onHost(uri, fmt.Errorf("reading the host's capabilities: %w", err))
	}
	kvm, err := offersKVM(caps)
	if err != nil {
		return provider.InPlacePlan{}, onHost(uri, err)
	}
	plan, err := planInPlace(m, desired, uri, d, kvm)
	if err != nil {
		return provider.InPlacePlan{}, onHost(uri, err)
	}
	return plan, nil
}

// UpdateInPlace implements provider.InPlaceUpdater: it gives the Machine's domain the memory and
// vCPU count of its providerSpec. It redefines the domain with them (its persistent definition,
// through libvirt's --config setters) when the definition lacks them, and, when the running domain
// lacks them, restarts it: the guest is asked to power off (ACPI) and the domain destroyed if it
// still runs Options.ShutdownTimeout later, then started with the new definition. It returns a
// RequeueAfter error while the guest powers off, and nil once the domain runs with the size. Every
// call decides from libvirt's state alone (nextRestart, with the restart mark), so a manager that
// died anywhere goes on where it stopped, and one change restarts the domain once.
func (p *Provider) UpdateInPlace(ctx context.Context, m *v1beta1.Machine) error {
	spec, err := parseSpec(m)
	if err != nil {
		return err
	}
	uri, _ := locateSpec(m)
	conn, err := p.hosts.get(uri).connect()
	if err != nil {
		return err
	}
	dom, err := p.domainOf(conn, m)
	if err != nil {
		return onHost(uri, err)
	}
	return onHost(uri, p.resize(ctx, m, conn, dom, shape{MemoryMiB: spec.MemoryMiB(), VCPUs: spec.VCPUs}))
}

// resize carries out one call's steps of UpdateInPlace.
func (p *Provider) resize(ctx context.Context, m *v1beta1.Machine, conn *libvirt.Libvirt, dom libvirt.Domain, want shape) error {
	logger := log.FromContext(ctx).WithValues("domain", dom.Name)
	persistent, err := readDomainXML(conn, dom, libvirt.DomainXMLInactive)
	if err != nil {
		return err
	}
	sized, err := persistent.sized(want)
	if err != nil {
		return fmt.Errorf("reading the size of domain %s: %w", dom.Name, err)
	}
	if !sized {
		if err := defineShape(conn, dom, want); err != nil {
			return err
		}
		logger.Info("redefined the libvirt domain with a new size; it takes effect when the domain starts next", "size", want.String())
	}
	s, err := restartStateOf(conn, dom, persistent.Metadata.Restart)
	if err != nil {
		return err
	}
	now := p.opts.Clock.Now()
	switch step := nextRestart(s, want, now, p.opts.ShutdownTimeout); step {
	case restartNone:
		return nil
	case restartFinish:
		if err := unmarkRestart(conn, dom); err != nil {
			return err
		}
		if s.live != want {
			return provider.RequeueAfter(restartPoll, fmt.Sprintf("libvirt domain %s restarted with %s, but its size has changed since, to %s", dom.Name, s.live, want))
		}
		logger.Info("the libvirt domain runs with its new size", "size", want.String())
		return nil
	case restartShutdown:
		requested := now
		if s.mark == nil {
			if err := markRestart(conn, dom, restartMark{Requested: now.UTC().Format(time.RFC3339), MemoryMiB: want.MemoryMiB, VCPUs: want.VCPUs}); err != nil {
				return err
			}
			logger.Info("restarting the libvirt domain for its new size: asked the guest to power off", "from", s.live.String(), "to", want.String(), "timeout", p.opts.ShutdownTimeout)
			p.event(m, corev1.EventTypeNormal, "DomainRestarting", "asked the guest of domain %s to power off, to start it again with %s instead of %s", dom.Name, want, s.live)
		} else if t, err := time.Parse(time.RFC3339, s.mark.Requested); err == nil {
			requested = t
		}
		if err := conn.DomainShutdownFlags(dom, libvirt.DomainShutdownAcpiPowerBtn); err != nil && !libvirtCode(err, libvirt.ErrOperationInvalid) {
			return fmt.Errorf("asking the guest of domain %s to power off: %w", dom.Name, err)
		}
		return provider.RequeueAfter(restartPoll, fmt.Sprintf("libvirt domain %s is powering off, to start again with %s (destroyed if it still runs at %s)",
			dom.Name, want, requested.Add(p.opts.ShutdownTimeout).UTC().Format(time.TimeOnly)))
	case restartDestroy:
		logger.Info("the guest did not power off in time: destroying the libvirt domain to start it with its new size", "timeout", p.opts.ShutdownTimeout)
		p.event(m, corev1.EventTypeWarning, "DomainDestroyed", "the guest of domain %s did not power off within %s: destroyed it, to start it again with %s", dom.Name, p.opts.ShutdownTimeout, want)
		if err := conn.DomainDestroy(dom); err != nil && !libvirtCode(err, libvirt.ErrOperationInvalid) {
			return fmt.Errorf("destroying domain %s: %w", dom.Name, err)
		}
		return p.restart(ctx, m, conn, dom, want)
	case restartStart:
		return p.restart(ctx, m, conn, dom, want)
	case restartStopped:
		return fmt.Errorf("domain %s is shut off, and not by its in-place update: the provider does not start it (a machine that went away is for the health check to replace); start it (virsh start %s) or delete the Machine", dom.Name, dom.Name)
	default:
		return fmt.Errorf("domain %s is %s: its in-place update goes on once it runs again (virsh resume %s)", dom.Name, stateName(s.state), dom.Name)
	}
}

// restart starts the domain an in-place update stopped, with its new definition, and removes the
// restart mark.
func (p *Provider) restart(ctx context.Context, m *v1beta1.Machine, conn *libvirt.Libvirt, dom libvirt.Domain, want shape) error {
	if err := conn.DomainCreate(dom); err != nil {
		return fmt.Errorf("starting domain %s with %s: %w", dom.Name, want, err)
	}
	log.FromContext(ctx).Info("started the libvirt domain with its new size", "domain", dom.Name, "size", want.String())
	p.event(m, corev1.EventTypeNormal, "DomainRestarted", "started domain %s again, with %s", dom.Name, want)
	return unmarkRestart(conn, dom)
}

// domainOf finds the Machine's domain; not finding it is an error.
func (p *Provider) domainOf(conn *libvirt.Libvirt, m *v1beta1.Machine) (libvirt.Domain, error) {
	dom, found, err := lookup(conn, m.UID)
	if err != nil {
		return dom, err
	}
	if !found {
		return dom, fmt.Errorf("machine %s/%s has no domain (UUID %s) to update in place", m.Namespace, m.Name, m.UID)
	}
	return dom, nil
}

// readDomainXML reads the domain's XML: live (flags 0, for a running domain) or persistent
// (DomainXMLInactive).
func readDomainXML(conn *libvirt.Libvirt, dom libvirt.Domain, flags libvirt.DomainXMLFlags) (domainRead, error) {
	data, err := conn.DomainGetXMLDesc(dom, flags)
	if err != nil {
		return domainRead{}, fmt.Errorf("reading domain %s: %w", dom.Name, err)
	}
	return readDomain(data)
}

// restartStateOf reads the domain's state and, when it runs, its live size and restart mark; mark
// is the one of its persistent definition.
func restartStateOf(conn *libvirt.Libvirt, dom libvirt.Domain, mark *restartMark) (restartState, error) {
	state, _, err := conn.DomainGetState(dom, 0)
	if err != nil {
		return restartState{}, fmt.Errorf("reading the state of domain %s: %w", dom.Name, err)
	}
	s := restartState{state: state, mark: mark}
	if !s.running() {
		return s, nil
	}
	live, err := readDomainXML(conn, dom, 0)
	if err != nil {
		return s, err
	}
	if live.ID <= 0 {
		// It stopped after its state was read: what was read is its persistent definition.
		return s, provider.RequeueAfter(time.Second, fmt.Sprintf("domain %s stopped while it was read", dom.Name))
	}
	if s.live, err = live.shape(); err != nil {
		return s, fmt.Errorf("reading the size of domain %s: %w", dom.Name, err)
	}
	s.liveMark = live.Metadata.Restart
	return s, nil
}

// defineShape gives the domain's persistent definition the size (virsh setmaxmem, setmem and
// setvcpus, each --config, the maximum first): the running domain keeps its own until it starts
// again.
func defineShape(conn *libvirt.Libvirt, dom libvirt.Domain, want shape) error {
	kib := uint64(want.MemoryMiB) << 10
	for _, flags := range []libvirt.DomainMemoryModFlags{libvirt.DomainMemConfig | libvirt.DomainMemMaximum, libvirt.DomainMemConfig} {
		if err := conn.DomainSetMemoryFlags(dom, kib, uint32(flags)); err != nil {
			return fmt.Errorf("defining domain %s with %d MiB of memory: %w", dom.Name, want.MemoryMiB, err)
		}
	}
	for _, flags := range []libvirt.DomainVCPUFlags{libvirt.DomainVCPUConfig | libvirt.DomainVCPUMaximum, libvirt.DomainVCPUConfig} {
		if err := conn.DomainSetVcpusFlags(dom, uint32(want.VCPUs), uint32(flags)); err != nil {
			return fmt.Errorf("defining domain %s with %d vCPUs: %w", dom.Name, want.VCPUs, err)
		}
	}
	return nil
}

// markRestart writes the restart mark into the domain's persistent definition only.
func markRestart(conn *libvirt.Libvirt, dom libvirt.Domain, mark restartMark) error {
	data, err := xml.Marshal(mark)
	if err != nil {
		return err
	}
	if err := conn.DomainSetMetadata(dom, int32(libvirt.DomainMetadataElement), libvirt.OptString{string(data)},
		libvirt.OptString{restartMetadataKey}, libvirt.OptString{RestartNamespace}, libvirt.DomainAffectConfig); err != nil {
		return fmt.Errorf("marking domain %s for a restart: %w", dom.Name, err)
	}
	return nil
}

// unmarkRestart removes the restart mark from the running domain's live and persistent
// definitions.
func unmarkRestart(conn *libvirt.Libvirt, dom libvirt.Domain) error {
	err := conn.DomainSetMetadata(dom, int32(libvirt.DomainMetadataElement), nil, nil, libvirt.OptString{RestartNamespace},
		libvirt.DomainAffectLive|libvirt.DomainAffectConfig)
	if err != nil && !libvirtCode(err, libvirt.ErrNoDomainMetadata) {
		return fmt.Errorf("removing the restart mark of domain %s: %w", dom.Name, err)
	}
	return nil
}

// event records an event on the Machine, when the provider has a recorder (a manager).
func (p *Provider) event(m *v1beta1.Machine, eventType, reason, format string, args ...any) {
	if cl, err := p.getCluster(); err == nil && cl.recorder != nil {
		cl.recorder.Eventf(m, nil, eventType, reason, "UpdateInPlace", format, args...)
	}
}
