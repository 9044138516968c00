package libvirtprovider

import (
	"encoding/xml"
	"fmt"
	"net/netip"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

const (
	// MetadataNamespace is the XML namespace of the provider's element in a domain's <metadata>.
	MetadataNamespace = "https://machineapi.dev/provider-libvirt/v1beta1"
	qemuNamespace     = "http://libvirt.org/schemas/domain/qemu/1.0"
	// tbCacheMiB bounds QEMU's translation cache under TCG: the default (1 GiB) makes each
	// emulated VM ~1.7 GiB of host memory instead of ~1 GiB.
	tbCacheMiB = 256
	// userNetNIC is the PCI slot of the user network's NIC, clear of the devices libvirt places.
	userNetNIC = "0x10"
	// apiServerPort is the port guests on the user network reach the API server at (10.0.N.254).
	apiServerPort = 6443
)

// metadata is what a domain records about its Machine, in its <metadata>: enough to find the
// Machine and the volumes again, to choose a free user-network subnet, and to say why it runs
// under kvm or qemu.
type metadata struct {
	Namespace        string `xml:"namespace"`
	Name             string `xml:"name"`
	UID              string `xml:"uid"`
	Manager          string `xml:"manager"`
	Pool             string `xml:"pool"`
	UserNetworkIndex int32  `xml:"userNetworkIndex,omitempty"`
	DomainTypeReason string `xml:"domainTypeReason,omitempty"`
	// Created is when the domain was defined (RFC 3339), for the orphan collector's grace
	// period; domains defined before it was recorded have none and are never collected.
	Created string `xml:"created,omitempty"`
}

// domainParams is everything a Machine's domain XML depends on.
type domainParams struct {
	Name       string
	UUID       string
	Title      string
	Type       api.DomainType
	VCPUs      int32
	MemoryMiB  int64
	Pool       string
	Disk, Seed string // volume names in Pool
	MAC        string
	// Network or Bridge attach the NIC through libvirt; else UserNet does, through QEMU.
	Network, Bridge string
	UserNet         *userNet
	ConsoleLog      string
	Meta            metadata
}

// userNet is one VM's user-mode network: subnet 10.0.Index.0/24 and one forward from
// 10.0.Index.254:6443 to the host's loopback API server.
type userNet struct {
	Index     int32
	ForwardTo netip.AddrPort
}

// GuestIP is the guest's address: QEMU's first DHCP address, and the static one the seed sets.
func (u userNet) GuestIP() string { return fmt.Sprintf("10.0.%d.15", u.Index) }

// Gateway is QEMU's gateway address in the subnet.
func (u userNet) Gateway() string { return fmt.Sprintf("10.0.%d.2", u.Index) }

// APIServer is where the guest reaches the API server.
func (u userNet) APIServer() string {
	return fmt.Sprintf("https://10.0.%d.254:%d", u.Index, apiServerPort)
}

// netdev is QEMU's -netdev argument: restrict=on keeps every guest packet inside QEMU but the one
// guestfwd, which runs socat for each guest connection to the loopback API server.
func (u userNet) netdev() string {
	return fmt.Sprintf("user,id=machineapi0,net=10.0.%d.0/24,restrict=on,guestfwd=tcp:10.0.%d.254:%d-cmd:socat - TCP:%s",
		u.Index, u.Index, apiServerPort, u.ForwardTo)
}

// The XML types below are written, never read: names with a prefix are written as they are.
type (
	domainXML struct {
		XMLName     xml.Name        `xml:"domain"`
		Type        string          `xml:"type,attr"`
		QEMUNS      string          `xml:"xmlns:qemu,attr,omitempty"`
		Name        string          `xml:"name"`
		UUID        string          `xml:"uuid"`
		Title       string          `xml:"title,omitempty"`
		Metadata    metadataXML     `xml:"metadata"`
		Memory      sizeXML         `xml:"memory"`
		VCPU        int32           `xml:"vcpu"`
		OS          osXML           `xml:"os"`
		Features    featuresXML     `xml:"features"`
		CPU         cpuXML          `xml:"cpu"`
		Clock       attrs           `xml:"clock"`
		OnPoweroff  string          `xml:"on_poweroff"`
		OnReboot    string          `xml:"on_reboot"`
		OnCrash     string          `xml:"on_crash"`
		Devices     devicesXML      `xml:"devices"`
		Commandline *commandlineXML `xml:"qemu:commandline,omitempty"`
	}
	metadataXML struct {
		Machine machineXML `xml:"machineapi:machine"`
	}
	machineXML struct {
		NS               string `xml:"xmlns:machineapi,attr"`
		Namespace        string `xml:"machineapi:namespace"`
		Name             string `xml:"machineapi:name"`
		UID              string `xml:"machineapi:uid"`
		Manager          string `xml:"machineapi:manager"`
		Pool             string `xml:"machineapi:pool"`
		UserNetworkIndex int32  `xml:"machineapi:userNetworkIndex,omitempty"`
		DomainTypeReason string `xml:"machineapi:domainTypeReason,omitempty"`
		Created          string `xml:"machineapi:created,omitempty"`
	}
	sizeXML struct {
		Unit  string `xml:"unit,attr"`
		Value int64  `xml:",chardata"`
	}
	osXML struct {
		Type struct {
			Arch    string `xml:"arch,attr"`
			Machine string `xml:"machine,attr"`
			Value   string `xml:",chardata"`
		} `xml:"type"`
		Boot attrs `xml:"boot"`
	}
	featuresXML struct {
		ACPI struct{} `xml:"acpi"`
		APIC struct{} `xml:"apic"`
		TCG  *tcgXML  `xml:"tcg,omitempty"`
	}
	tcgXML struct {
		TBCache sizeXML `xml:"tb-cache"`
	}
	cpuXML struct {
		Mode  string `xml:"mode,attr"`
		Check string `xml:"check,attr,omitempty"`
	}
	attrs struct {
		Attrs []xml.Attr `xml:",any,attr"`
	}
	devicesXML struct {
		Disks      []diskXML  `xml:"disk"`
		Interfaces []ifaceXML `xml:"interface"`
		Serial     serialXML  `xml:"serial"`
		Console    consoleXML `xml:"console"`
		RNG        rngXML     `xml:"rng"`
		Memballoon attrs      `xml:"memballoon"`
	}
	diskXML struct {
		Type     string    `xml:"type,attr"`
		Device   string    `xml:"device,attr"`
		Driver   attrs     `xml:"driver"`
		Source   attrs     `xml:"source"`
		Target   attrs     `xml:"target"`
		ReadOnly *struct{} `xml:"readonly,omitempty"`
		Serial   string    `xml:"serial,omitempty"`
	}
	ifaceXML struct {
		Type   string `xml:"type,attr"`
		MAC    attrs  `xml:"mac"`
		Source attrs  `xml:"source"`
		Model  attrs  `xml:"model"`
	}
	serialXML struct {
		Type   string `xml:"type,attr"`
		Log    attrs  `xml:"log"`
		Target attrs  `xml:"target"`
	}
	consoleXML struct {
		Type   string `xml:"type,attr"`
		Target attrs  `xml:"target"`
	}
	rngXML struct {
		Model   string `xml:"model,attr"`
		Backend struct {
			Model string `xml:"model,attr"`
			Value string `xml:",chardata"`
		} `xml:"backend"`
	}
	commandlineXML struct {
		Args []argXML `xml:"qemu:arg"`
	}
	argXML struct {
		Value string `xml:"value,attr"`
	}
)

func attr(kv ...string) attrs {
	var a attrs
	for i := 0; i+1 < len(kv); i += 2 {
		a.Attrs = append(a.Attrs, xml.Attr{Name: xml.Name{Local: kv[i]}, Value: kv[i+1]})
	}
	return a
}

// renderDomain writes the domain XML of a Machine's virtual machine: BIOS boot from the overlay
// (vda), the seed read-only on vdb with the serial the node image looks for, one virtio NIC, a
// serial console logged to ConsoleLog, and the Machine's metadata.
func renderDomain(p domainParams) ([]byte, error) {
	d := domainXML{
		Type:  string(p.Type),
		Name:  p.Name,
		UUID:  p.UUID,
		Title: p.Title,
		Metadata: metadataXML{Machine: machineXML{
			NS: MetadataNamespace, Namespace: p.Meta.Namespace, Name: p.Meta.Name, UID: p.Meta.UID, Manager: p.Meta.Manager,
			Pool: p.Meta.Pool, UserNetworkIndex: p.Meta.UserNetworkIndex, DomainTypeReason: p.Meta.DomainTypeReason, Created: p.Meta.Created,
		}},
		Memory:     sizeXML{Unit: "MiB", Value: p.MemoryMiB},
		VCPU:       p.VCPUs,
		Clock:      attr("offset", "utc"),
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		OnCrash:    "destroy",
	}
	d.OS.Type.Arch, d.OS.Type.Machine, d.OS.Type.Value = "x86_64", "pc", "hvm"
	d.OS.Boot = attr("dev", "hd")
	switch p.Type {
	case api.DomainTypeKVM:
		d.CPU = cpuXML{Mode: "host-passthrough", Check: "none"}
	case api.DomainTypeQEMU:
		d.CPU = cpuXML{Mode: "maximum", Check: "none"}
		d.Features.TCG = &tcgXML{TBCache: sizeXML{Unit: "MiB", Value: tbCacheMiB}}
	default:
		return nil, fmt.Errorf("domain type %q is neither kvm nor qemu", p.Type)
	}
	d.Devices.Disks = []diskXML{
		{
			Type: "volume", Device: "disk",
			Driver: attr("name", "qemu", "type", "qcow2", "discard", "unmap"),
			Source: attr("pool", p.Pool, "volume", p.Disk),
			Target: attr("dev", "vda", "bus", "virtio"),
		},
		{
			Type: "volume", Device: "disk",
			Driver:   attr("name", "qemu", "type", "raw"),
			Source:   attr("pool", p.Pool, "volume", p.Seed),
			Target:   attr("dev", "vdb", "bus", "virtio"),
			ReadOnly: &struct{}{},
			Serial:   seedSerial,
		},
	}
	switch {
	case p.Network != "":
		d.Devices.Interfaces = []ifaceXML{{Type: "network", MAC: attr("address", p.MAC), Source: attr("network", p.Network), Model: attr("type", "virtio")}}
	case p.Bridge != "":
		d.Devices.Interfaces = []ifaceXML{{Type: "bridge", MAC: attr("address", p.MAC), Source: attr("bridge", p.Bridge), Model: attr("type", "virtio")}}
	case p.UserNet != nil:
		d.QEMUNS = qemuNamespace
		d.Commandline = &commandlineXML{Args: []argXML{
			{"-netdev"}, {p.UserNet.netdev()},
			{"-device"}, {"virtio-net-pci,netdev=machineapi0,mac=" + p.MAC + ",bus=pci.0,addr=" + userNetNIC},
		}}
	default:
		return nil, fmt.Errorf("domain %s has no network attachment", p.Name)
	}
	d.Devices.Serial = serialXML{Type: "pty", Target: attr("port", "0")}
	if p.ConsoleLog != "" {
		d.Devices.Serial.Log = attr("file", p.ConsoleLog, "append", "off")
	}
	d.Devices.Console = consoleXML{Type: "pty", Target: attr("type", "serial", "port", "0")}
	d.Devices.RNG.Model = "virtio"
	d.Devices.RNG.Backend.Model, d.Devices.RNG.Backend.Value = "random", "/dev/urandom"
	d.Devices.Memballoon = attr("model", "none")
	return xml.MarshalIndent(d, "", "  ")
}

// domainRead is the part of a defined domain's XML the provider reads back: live (the running
// QEMU's) or persistent (what the next start boots), depending on how it was asked for.
type domainRead struct {
	Type string `xml:"type,attr"`
	// ID is the running domain's id (virsh domid); 0 when the XML is not a running domain's.
	ID            int32       `xml:"id,attr"`
	Name          string      `xml:"name"`
	UUID          string      `xml:"uuid"`
	Memory        memoryRead  `xml:"memory"`
	CurrentMemory *memoryRead `xml:"currentMemory"`
	VCPU          struct {
		Current int32 `xml:"current,attr"`
		Max     int32 `xml:",chardata"`
	} `xml:"vcpu"`
	Metadata struct {
		Machine *metadata `xml:"https://machineapi.dev/provider-libvirt/v1beta1 machine"`
		// Restart is the mark of a restart for an in-place update (inplace.go).
		Restart *restartMark `xml:"https://machineapi.dev/provider-libvirt/v1beta1/restart restart"`
	} `xml:"metadata"`
	Devices struct {
		Interfaces []struct {
			Type   string `xml:"type,attr"`
			Source struct {
				Network string `xml:"network,attr"`
				Bridge  string `xml:"bridge,attr"`
			} `xml:"source"`
		} `xml:"interface"`
	} `xml:"devices"`
}

// memoryRead is a memory size in a domain's XML.
type memoryRead struct {
	Unit  string `xml:"unit,attr"`
	Value uint64 `xml:",chardata"`
}

// memoryUnits are libvirt's memory units in bytes (libvirt writes KiB; the rest are accepted).
var memoryUnits = map[string]uint64{
	"b": 1, "bytes": 1, "KB": 1e3, "k": 1 << 10, "KiB": 1 << 10, "MB": 1e6, "M": 1 << 20, "MiB": 1 << 20,
	"GB": 1e9, "G": 1 << 30, "GiB": 1 << 30, "TB": 1e12, "T": 1 << 40, "TiB": 1 << 40,
}

// MiB is the size in MiB, rounded up.
func (m memoryRead) MiB() (int64, error) {
	unit := m.Unit
	if unit == "" {
		unit = "KiB" // libvirt's default
	}
	scale, ok := memoryUnits[unit]
	if !ok {
		return 0, fmt.Errorf("memory unit %q is not one libvirt writes", unit)
	}
	const mib = 1 << 20
	return int64((m.Value*scale + mib - 1) / mib), nil
}

// shape is how big a domain is: what an in-place update changes.
type shape struct {
	MemoryMiB int64
	VCPUs     int32
}

func (s shape) String() string {
	if s.VCPUs == 1 {
		return fmt.Sprintf("%d MiB and 1 vCPU", s.MemoryMiB)
	}
	return fmt.Sprintf("%d MiB and %d vCPUs", s.MemoryMiB, s.VCPUs)
}

// shape is the domain's size: its memory (the maximum, which is what the guest sees without a
// balloon) and the vCPUs it boots with.
func (d domainRead) shape() (shape, error) {
	mib, err := d.Memory.MiB()
	if err != nil {
		return shape{}, err
	}
	s := shape{MemoryMiB: mib, VCPUs: d.VCPU.Max}
	if d.VCPU.Current != 0 {
		s.VCPUs = d.VCPU.Current
	}
	return s, nil
}

// sized reports whether the domain is defined with exactly want: as its memory and its current
// memory, as its vCPUs and their maximum (the provider defines them equal, and so does an in-place
// update).
func (d domainRead) sized(want shape) (bool, error) {
	have, err := d.shape()
	if err != nil || have != want || d.VCPU.Max != want.VCPUs {
		return false, err
	}
	if d.CurrentMemory != nil {
		current, err := d.CurrentMemory.MiB()
		if err != nil || current != want.MemoryMiB {
			return false, err
		}
	}
	return true, nil
}

// readDomain parses a domain's XML; Metadata.Machine is nil for a domain the provider did not define.
func readDomain(data string) (domainRead, error) {
	var d domainRead
	if err := xml.Unmarshal([]byte(data), &d); err != nil {
		return d, fmt.Errorf("reading domain XML: %w", err)
	}
	return d, nil
}

// macAddress derives the NIC's MAC from the Machine's UID: stable across re-creations of the
// domain, in QEMU's locally administered 52:54:00 range.
func macAddress(uuid [16]byte) string {
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", uuid[13], uuid[14], uuid[15])
}

// formatUUID is a UUID's canonical text form.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
