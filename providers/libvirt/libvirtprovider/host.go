package libvirtprovider

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/apimachinery/pkg/types"
)

// hosts keeps one libvirt connection per URI, reconnecting when one drops.
type hosts struct {
	mu    sync.Mutex
	hosts map[string]*host
}

// host is one libvirt host: its connection, and the lock that makes choosing a user-network
// subnet and defining the domain that records it one step for this process.
type host struct {
	uri string

	mu   sync.Mutex // guards conn; held while dialling
	conn *libvirt.Libvirt

	define sync.Mutex
}

func (hs *hosts) get(uri string) *host {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.hosts == nil {
		hs.hosts = map[string]*host{}
	}
	h, ok := hs.hosts[uri]
	if !ok {
		h = &host{uri: uri}
		hs.hosts[uri] = h
	}
	return h
}

// uris returns the URIs of the hosts the provider has looked up.
func (hs *hosts) uris() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := make([]string, 0, len(hs.hosts))
	for u := range hs.hosts {
		out = append(out, u)
	}
	return out
}

// connect returns the host's connection, dialling it when there is none or it dropped.
func (h *host) connect() (*libvirt.Libvirt, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil && h.conn.IsConnected() {
		return h.conn, nil
	}
	u, err := url.Parse(h.uri)
	if err != nil {
		return nil, err // validated before: not reached
	}
	conn, err := libvirt.ConnectToURI(u)
	if err != nil {
		return nil, &unreachableError{uri: u.Redacted(), err: err}
	}
	h.conn = conn
	return conn, nil
}

// unreachableError says that a libvirt host could not be reached, and what to check.
type unreachableError struct {
	uri string
	err error
}

func (e *unreachableError) Error() string {
	hint := "check that libvirtd runs on that host and that the URI is right"
	if strings.Contains(e.uri, "+ssh") || strings.Contains(e.uri, "+libssh") {
		hint += ", that sshd there accepts the manager's key (keyfile= in the URI) and that the host key is in known_hosts"
	}
	if strings.HasPrefix(e.uri, "qemu:///") || strings.HasPrefix(e.uri, "qemu+unix:///") {
		hint += " (locally, providers/libvirt/hack/host-setup.sh starts libvirtd)"
	}
	return fmt.Sprintf("cannot reach libvirt at %s: %v; %s", e.uri, e.err, hint)
}

func (e *unreachableError) Unwrap() error { return e.err }

func isUnreachable(err error) bool {
	var u *unreachableError
	return errors.As(err, &u)
}

// libvirtCode reports whether err is a libvirt error with this code.
func libvirtCode(err error, code libvirt.ErrorNumber) bool {
	var e libvirt.Error
	return errors.As(err, &e) && e.Code == uint32(code)
}

// domainUUID is the Machine's UID as a libvirt domain UUID.
func domainUUID(uid types.UID) (libvirt.UUID, error) {
	var u libvirt.UUID
	b, err := hex.DecodeString(strings.ReplaceAll(string(uid), "-", ""))
	if err != nil || len(b) != len(u) {
		return u, fmt.Errorf("machine UID %q is not a UUID", uid)
	}
	copy(u[:], b)
	return u, nil
}

// lookup finds the Machine's domain by UUID; found is false when there is none.
func lookup(conn *libvirt.Libvirt, uid types.UID) (dom libvirt.Domain, found bool, err error) {
	id, err := domainUUID(uid)
	if err != nil {
		return dom, false, err
	}
	dom, err = conn.DomainLookupByUUID(id)
	if libvirtCode(err, libvirt.ErrNoDomain) {
		return dom, false, nil
	}
	if err != nil {
		return dom, false, fmt.Errorf("looking up domain %s: %w", uid, err)
	}
	return dom, true, nil
}

// hostCapabilities is the part of libvirt's capabilities XML the provider reads.
type hostCapabilities struct {
	Guests []struct {
		Arch struct {
			Name    string `xml:"name,attr"`
			Domains []struct {
				Type string `xml:"type,attr"`
			} `xml:"domain"`
		} `xml:"arch"`
	} `xml:"guest"`
}

// offersKVM reports whether the host offers kvm domains for x86_64 guests.
func offersKVM(capsXML string) (bool, error) {
	var caps hostCapabilities
	if err := xml.Unmarshal([]byte(capsXML), &caps); err != nil {
		return false, fmt.Errorf("reading the host's capabilities: %w", err)
	}
	for _, g := range caps.Guests {
		if g.Arch.Name != "x86_64" {
			continue
		}
		for _, d := range g.Arch.Domains {
			if d.Type == "kvm" {
				return true, nil
			}
		}
	}
	return false, nil
}

// domainStates are libvirt's virDomainState names, as virsh prints them.
var domainStates = map[int32]string{
	0: "no state", 1: "running", 2: "blocked", 3: "paused", 4: "shutting down", 5: "shut off", 6: "crashed", 7: "suspended",
}

const stateRunning, stateShutoff = 1, 5

func stateName(s int32) string {
	if n, ok := domainStates[s]; ok {
		return n
	}
	return fmt.Sprintf("state %d", s)
}
