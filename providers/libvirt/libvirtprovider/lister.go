package libvirtprovider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"
)

var _ provider.Lister = (*Provider)(nil)

// List implements provider.Lister: the domains this manager (Options.ManagerID, in the domains'
// metadata) defined on each host of Options.ListURIs and each host the provider has connected to.
// A host that cannot be listed fails the whole list: a partial list would make the instances of
// the missing host look like nothing, never like orphans, but the collector must not think it
// has seen everything.
func (p *Provider) List(ctx context.Context) ([]provider.Instance, error) {
	var out []provider.Instance
	for _, uri := range p.listURIs() {
		conn, err := p.hosts.get(uri).connect()
		if err != nil {
			return nil, err
		}
		doms, _, err := conn.ConnectListAllDomains(1, libvirt.ConnectListDomainsActive|libvirt.ConnectListDomainsInactive)
		if err != nil {
			return nil, fmt.Errorf("listing the domains of %s: %w", uri, err)
		}
		for _, d := range doms {
			data, err := conn.DomainGetXMLDesc(d, 0)
			if libvirtCode(err, libvirt.ErrNoDomain) {
				continue // undefined since the listing
			}
			if err != nil {
				return nil, fmt.Errorf("reading domain %s on %s: %w", d.Name, uri, err)
			}
			r, err := readDomain(data)
			if err != nil {
				return nil, fmt.Errorf("reading domain %s on %s: %w", d.Name, uri, err)
			}
			md := r.Metadata.Machine
			if md == nil || md.Manager != p.opts.ManagerID {
				continue
			}
			created, _ := time.Parse(time.RFC3339, md.Created)
			out = append(out, provider.Instance{
				ProviderID: ProviderIDPrefix + md.UID, MachineUID: types.UID(md.UID), MachineNamespace: md.Namespace, MachineName: md.Name, Created: created,
			})
		}
	}
	return out, nil
}

// DeleteInstance implements provider.Lister: it finds the domain by the Machine UID on the hosts
// List looks at, and removes it as Delete does (domain, volumes, bootstrap token).
func (p *Provider) DeleteInstance(ctx context.Context, inst provider.Instance) error {
	cl, err := p.getCluster()
	if err != nil {
		return err
	}
	m := &v1beta1.Machine{}
	m.Namespace, m.Name, m.UID = inst.MachineNamespace, inst.MachineName, inst.MachineUID
	for _, uri := range p.listURIs() {
		conn, err := p.hosts.get(uri).connect()
		if err != nil {
			return err
		}
		dom, found, err := lookup(conn, inst.MachineUID)
		if err != nil {
			return onHost(uri, err)
		}
		if !found {
			continue
		}
		pool := ""
		if data, err := conn.DomainGetXMLDesc(dom, 0); err == nil {
			if r, err := readDomain(data); err == nil && r.Metadata.Machine != nil {
				pool = r.Metadata.Machine.Pool
			}
		}
		if err := p.teardown(ctx, cl, conn, dom, true, pool, m); err != nil {
			return onHost(uri, err)
		}
		log.FromContext(ctx).Info("deleted the libvirt domain of a Machine that no longer exists", "domain", dom.Name, "uri", uri, "machineUID", inst.MachineUID)
		return nil
	}
	return nil // gone already
}

// listURIs are the hosts List and DeleteInstance look at: Options.ListURIs and every host the
// provider has connected to, sorted.
func (p *Provider) listURIs() []string {
	uris := map[string]bool{}
	for _, u := range p.opts.ListURIs {
		uris[strings.TrimSpace(u)] = true
	}
	for _, u := range p.hosts.uris() {
		uris[u] = true
	}
	delete(uris, "")
	return slices.Sorted(maps.Keys(uris))
}
