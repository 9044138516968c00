package vms

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	"k8s.io/apimachinery/pkg/types"
)

// Host is the libvirt host the suite's VMs run on, seen directly through go-libvirt, not through
// the provider: what the suite checks (domains, volumes) and what it breaks (a domain destroyed
// behind the provider's back).
type Host struct {
	URI  string
	Pool string
	conn *libvirt.Libvirt
}

// ConnectHost connects to the libvirt host at uri (qemu:///system: the local socket).
func ConnectHost(uri, pool string) (*Host, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	conn, err := libvirt.ConnectToURI(u)
	if err != nil {
		return nil, fmt.Errorf("cannot reach libvirtd at %s (%w): run providers/libvirt/hack/host-setup.sh as root", uri, err)
	}
	return &Host{URI: uri, Pool: pool, conn: conn}, nil
}

// Close disconnects.
func (h *Host) Close() { _ = h.conn.Disconnect() }

// Domain is a libvirt domain as the suite sees it.
type Domain struct {
	Name    string
	UUID    string
	Running bool
	// ID is libvirt's id of the running domain (virsh domid), new at each start; -1 when it is
	// not running.
	ID int32
	// MemoryMiB and VCPUs are the size the domain runs with (its live definition), or is defined
	// with when it is not running.
	MemoryMiB int64
	VCPUs     int32
	// Manager, Namespace, MachineName and MachineUID come from the provider's metadata; empty for a
	// domain the provider did not define.
	Manager, Namespace, MachineName, MachineUID string
}

// domainXML is the part of a domain's XML the suite reads: the provider's metadata (in the XML
// namespace libvirtprovider.MetadataNamespace).
type domainXML struct {
	Name   string `xml:"name"`
	UUID   string `xml:"uuid"`
	Memory struct {
		Unit  string `xml:"unit,attr"`
		Value int64  `xml:",chardata"`
	} `xml:"memory"`
	VCPU struct {
		Current int32 `xml:"current,attr"`
		Max     int32 `xml:",chardata"`
	} `xml:"vcpu"`
	Metadata struct {
		Machine *struct {
			Namespace string `xml:"namespace"`
			Name      string `xml:"name"`
			UID       string `xml:"uid"`
			Manager   string `xml:"manager"`
		} `xml:"https://machineapi.dev/provider-libvirt/v1beta1 machine"`
	} `xml:"metadata"`
}

func (h *Host) describe(dom libvirt.Domain) (Domain, error) {
	data, err := h.conn.DomainGetXMLDesc(dom, 0)
	if err != nil {
		return Domain{}, err
	}
	var x domainXML
	if err := xml.Unmarshal([]byte(data), &x); err != nil {
		return Domain{}, fmt.Errorf("reading domain %s: %w", dom.Name, err)
	}
	state, _, err := h.conn.DomainGetState(dom, 0)
	if err != nil {
		return Domain{}, err
	}
	if x.Memory.Unit != "KiB" {
		return Domain{}, fmt.Errorf("domain %s: memory in %q, not the KiB libvirt writes", dom.Name, x.Memory.Unit)
	}
	d := Domain{Name: x.Name, UUID: x.UUID, Running: state == 1, ID: dom.ID, MemoryMiB: x.Memory.Value >> 10, VCPUs: x.VCPU.Max} // VIR_DOMAIN_RUNNING
	if x.VCPU.Current != 0 {
		d.VCPUs = x.VCPU.Current
	}
	if m := x.Metadata.Machine; m != nil {
		d.Manager, d.Namespace, d.MachineName, d.MachineUID = m.Manager, m.Namespace, m.Name, m.UID
	}
	return d, nil
}

// Domains returns the domains (running or not) whose metadata names the manager.
func (h *Host) Domains(manager string) ([]Domain, error) {
	doms, _, err := h.conn.ConnectListAllDomains(1, libvirt.ConnectListDomainsActive|libvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, err
	}
	var out []Domain
	for _, dom := range doms {
		d, err := h.describe(dom)
		if isCode(err, libvirt.ErrNoDomain) {
			continue // undefined meanwhile
		}
		if err != nil {
			return nil, err
		}
		if d.Manager == manager {
			out = append(out, d)
		}
	}
	return out, nil
}

// DomainOf returns the domain of the Machine with this UID (its UUID), if there is one.
func (h *Host) DomainOf(uid types.UID) (Domain, bool, error) {
	dom, err := h.lookup(uid)
	if isCode(err, libvirt.ErrNoDomain) {
		return Domain{}, false, nil
	}
	if err != nil {
		return Domain{}, false, err
	}
	d, err := h.describe(dom)
	if isCode(err, libvirt.ErrNoDomain) {
		return Domain{}, false, nil
	}
	return d, err == nil, err
}

func (h *Host) lookup(uid types.UID) (libvirt.Domain, error) {
	var u libvirt.UUID
	b, err := hex.DecodeString(strings.ReplaceAll(string(uid), "-", ""))
	if err != nil || len(b) != len(u) {
		return libvirt.Domain{}, fmt.Errorf("machine UID %q is not a UUID", uid)
	}
	copy(u[:], b)
	return h.conn.DomainLookupByUUID(u)
}

// Destroy powers the Machine's domain off at once (virsh destroy), as a host failure would,
// without the provider knowing.
func (h *Host) Destroy(uid types.UID) error {
	dom, err := h.lookup(uid)
	if err != nil {
		return err
	}
	return h.conn.DomainDestroy(dom)
}

// Remove destroys and undefines a domain: the suite's last resort when the manager could not
// delete what it made.
func (h *Host) Remove(d Domain) error {
	dom, err := h.lookup(types.UID(d.UUID))
	if isCode(err, libvirt.ErrNoDomain) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.conn.DomainDestroy(dom); err != nil && !isCode(err, libvirt.ErrOperationInvalid) && !isCode(err, libvirt.ErrNoDomain) {
		return err
	}
	flags := libvirt.DomainUndefineManagedSave | libvirt.DomainUndefineSnapshotsMetadata | libvirt.DomainUndefineNvram | libvirt.DomainUndefineCheckpointsMetadata
	if err := h.conn.DomainUndefineFlags(dom, flags); err != nil && !isCode(err, libvirt.ErrNoDomain) {
		return err
	}
	return nil
}

// Volumes returns the names of the pool's volumes, after a refresh (the provider may have
// created or deleted some since).
func (h *Host) Volumes() ([]string, error) {
	pool, err := h.conn.StoragePoolLookupByName(h.Pool)
	if err != nil {
		return nil, fmt.Errorf("storage pool %s: %w (providers/libvirt/hack/host-setup.sh defines it)", h.Pool, err)
	}
	if err := h.conn.StoragePoolRefresh(pool, 0); err != nil {
		return nil, err
	}
	vols, _, err := h.conn.StoragePoolListAllVolumes(pool, 1, 0)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vols))
	for _, v := range vols {
		names = append(names, v.Name)
	}
	return names, nil
}

// VolumesOf returns the pool's volumes that belong to the Machine with this UID: the provider
// names them machineapi-<uid>-disk.qcow2 and machineapi-<uid>-seed.img.
func (h *Host) VolumesOf(uid types.UID) ([]string, error) {
	all, err := h.Volumes()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range all {
		if strings.HasPrefix(v, "machineapi-"+string(uid)+"-") {
			out = append(out, v)
		}
	}
	return out, nil
}

// HasVolume reports whether the pool holds the named volume.
func (h *Host) HasVolume(name string) (bool, error) {
	all, err := h.Volumes()
	if err != nil {
		return false, err
	}
	for _, v := range all {
		if v == name {
			return true, nil
		}
	}
	return false, nil
}

// DeleteVolume deletes a volume of the pool; one already gone is no error.
func (h *Host) DeleteVolume(name string) error {
	pool, err := h.conn.StoragePoolLookupByName(h.Pool)
	if err != nil {
		return err
	}
	vol, err := h.conn.StorageVolLookupByName(pool, name)
	if isCode(err, libvirt.ErrNoStorageVol) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.conn.StorageVolDelete(vol, 0); err != nil && !isCode(err, libvirt.ErrNoStorageVol) {
		return err
	}
	return nil
}

func isCode(err error, code libvirt.ErrorNumber) bool {
	var lerr libvirt.Error
	return errors.As(err, &lerr) && lerr.Code == uint32(code)
}

// QEMUPid is the pid of a running domain's QEMU process, from the pid file libvirtd keeps for it
// on the local host.
func QEMUPid(domainName string) (int, error) {
	data, err := os.ReadFile(filepath.Join("/run/libvirt/qemu", domainName+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on Linux.
const clockTicks = 100

// CPUTime is how much CPU (user and system) a process has used, from /proc/<pid>/stat.
func CPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after its closing parenthesis.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 of the line
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// LoadAverage is the host's 1-minute load average, from /proc/loadavg.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
