package libvirtprovider

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/client-go/rest"

	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// plan is what Create checked on the host before defining anything: where the Machine's volumes
// go, the image its disk overlays, the domain type and how the guest reaches the API server.
type plan struct {
	pool       libvirt.StoragePool
	base       volumeRead
	diskSize   uint64
	domainType api.DomainType
	reason     string
	endpoint   endpoint
}

// endpoint is how a guest reaches the API server.
type endpoint struct {
	// server is the URL in the bootstrap kubeconfig; empty on the user network, where it is
	// https://10.0.N.254:6443 for the VM's N.
	server        string
	tlsServerName string
	// forwardTo is where the user network's one forward leads, on the host's loopback.
	forwardTo netip.AddrPort
}

// checkHost checks what the providerSpec needs from the host, returning InvalidConfiguration
// errors that say what to change: the storage pools, the image volume and its size, kvm when
// asked for, the libvirt network.
func checkHost(conn *libvirt.Libvirt, uri string, spec api.ProviderSpec) (plan, error) {
	var pl plan
	machinePool, err := activePool(conn, uri, spec.StoragePool, "providerSpec.value.storagePool")
	if err != nil {
		return pl, err
	}
	imagePool, err := activePool(conn, uri, spec.Image.Pool, "providerSpec.value.image.pool")
	if err != nil {
		return pl, err
	}
	vol, found, err := volume(conn, imagePool, spec.Image.Volume)
	if err == nil && !found {
		// A volume copied into a directory pool's folder shows once the pool is refreshed.
		if err = conn.StoragePoolRefresh(imagePool, 0); err == nil {
			vol, found, err = volume(conn, imagePool, spec.Image.Volume)
		}
	}
	if err != nil {
		return pl, err
	}
	if !found {
		return pl, provider.InvalidConfiguration("volume %q not found in pool %q on %s: build the node image with `make node-image` and import it with providers/libvirt/hack/import-node-image.sh, or change providerSpec.value.image",
			spec.Image.Volume, spec.Image.Pool, uri)
	}
	if pl.base, err = describeVolume(conn, vol); err != nil {
		return pl, err
	}
	pl.pool, pl.diskSize = machinePool, pl.base.Capacity
	if spec.DiskSize != nil {
		size := uint64(spec.DiskSize.Value())
		if size < pl.base.Capacity {
			return pl, provider.InvalidConfiguration("providerSpec.value.diskSize %s is smaller than the image volume %s (%d bytes): set at least %dMi, or leave it empty for the image's size",
				spec.DiskSize, spec.Image.Volume, pl.base.Capacity, (pl.base.Capacity+(1<<20)-1)>>20)
		}
		pl.diskSize = size
	}
	caps, err := conn.ConnectGetCapabilities()
	if err != nil {
		return pl, fmt.Errorf("reading the host's capabilities: %w", err)
	}
	kvm, err := offersKVM(caps)
	if err != nil {
		return pl, err
	}
	if pl.domainType, pl.reason, err = chooseDomainType(spec.DomainType, kvm, uri); err != nil {
		return pl, err
	}
	if name := spec.Network.Network; name != "" {
		_, err := conn.NetworkLookupByName(name)
		if libvirtCode(err, libvirt.ErrNoNetwork) {
			return pl, provider.InvalidConfiguration("libvirt network %q not found on %s: define it there (virsh net-list --all), or change providerSpec.value.network", name, uri)
		}
		if err != nil {
			return pl, fmt.Errorf("looking up libvirt network %s: %w", name, err)
		}
	}
	return pl, nil
}

func activePool(conn *libvirt.Libvirt, uri, name, field string) (libvirt.StoragePool, error) {
	p, found, err := pool(conn, name)
	if err != nil {
		return p, err
	}
	if !found {
		return p, provider.InvalidConfiguration("storage pool %q not found on %s: define it there (providers/libvirt/hack/host-setup.sh defines one named default), or change %s", name, uri, field)
	}
	active, err := conn.StoragePoolIsActive(p)
	if err != nil {
		return p, fmt.Errorf("checking storage pool %s: %w", name, err)
	}
	if active == 0 {
		return p, fmt.Errorf("storage pool %s on %s is not active: start it (virsh pool-start %s)", name, uri, name)
	}
	return p, nil
}

// chooseDomainType decides kvm or qemu, and says why.
func chooseDomainType(requested api.DomainType, kvmOffered bool, uri string) (api.DomainType, string, error) {
	switch {
	case requested == api.DomainTypeKVM && !kvmOffered:
		return "", "", provider.InvalidConfiguration("providerSpec.value.domainType is kvm but the host at %s offers no kvm domains for x86_64 guests (no usable /dev/kvm): use qemu, or leave it empty to choose automatically", uri)
	case requested != "":
		return requested, "set in providerSpec.value.domainType", nil
	case kvmOffered:
		return api.DomainTypeKVM, "chosen automatically: the host offers kvm for x86_64 guests (set providerSpec.value.domainType: qemu where /dev/kvm cannot run the guest)", nil
	default:
		return api.DomainTypeQEMU, "chosen automatically: the host offers no kvm for x86_64 guests, so QEMU emulates them (TCG, several times slower)", nil
	}
}

// guestEndpoint decides how the guest reaches the API server, from the providerSpec, the
// manager's client configuration and --libvirt-apiserver-url.
func guestEndpoint(spec api.ProviderSpec, cfg *rest.Config, apiServerURL string) (endpoint, error) {
	own, err := hostURL(cfg.Host)
	if err != nil {
		return endpoint{}, fmt.Errorf("the manager's API server address %q: %w", cfg.Host, err)
	}
	if u := spec.Network.UserLoopback; u != nil {
		ep := endpoint{tlsServerName: u.TLSServerName}
		if ep.tlsServerName == "" {
			ep.tlsServerName = cfg.ServerName
		}
		if ep.tlsServerName == "" {
			ep.tlsServerName = own.Hostname()
		}
		forward := u.APIServer
		if forward == "" {
			forward = own.Host
		}
		if ep.forwardTo, err = api.LoopbackAPIServer(forward); err != nil {
			if u.APIServer == "" {
				return endpoint{}, provider.InvalidConfiguration("providerSpec.value.network.userLoopback.apiServer is empty and the manager reaches its API server at %s, which is not on the host's loopback: set apiServer to the 127.0.0.1:<port> the libvirt host's kube-apiserver listens on", own.Host)
			}
			return endpoint{}, provider.InvalidConfiguration("providerSpec.value.network.userLoopback.apiServer: %v", err)
		}
		return ep, nil
	}
	if apiServerURL == "" {
		if addr, err := netip.ParseAddr(own.Hostname()); (err == nil && addr.IsLoopback()) || own.Hostname() == "localhost" {
			return endpoint{}, fmt.Errorf("guests on a libvirt network or bridge cannot reach the API server at %s, the manager's loopback: run the manager with --libvirt-apiserver-url set to an address they reach, or attach them with network.userLoopback", own)
		}
		return endpoint{server: own.String(), tlsServerName: cfg.ServerName}, nil
	}
	u, err := hostURL(apiServerURL)
	if err != nil {
		return endpoint{}, fmt.Errorf("--libvirt-apiserver-url %q: %w", apiServerURL, err)
	}
	return endpoint{server: u.String()}, nil
}

// hostURL parses an API server address as client-go does (a URL, or host:port meaning https).
func hostURL(host string) (*url.URL, error) {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("not an https:// address")
	}
	if u.Port() == "" {
		u.Host += ":443"
	}
	return u, nil
}
