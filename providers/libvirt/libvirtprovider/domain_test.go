package libvirtprovider

import (
	"encoding/xml"
	"net/netip"
	"strings"
	"testing"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

// anyXML reads any XML document into a tree, to check rendered documents by their structure.
type anyXML struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []anyXML   `xml:",any"`
}

// find returns the elements at a path of local names below n.
func (n anyXML) find(path ...string) []anyXML {
	if len(path) == 0 {
		return []anyXML{n}
	}
	var out []anyXML
	for _, c := range n.Children {
		if c.XMLName.Local == path[0] {
			out = append(out, c.find(path[1:]...)...)
		}
	}
	return out
}

func (n anyXML) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n anyXML) text(path ...string) string {
	found := n.find(path...)
	if len(found) != 1 {
		return "<" + strings.Join(path, "/") + ": " + string(rune('0'+len(found))) + " found>"
	}
	return strings.TrimSpace(found[0].Text)
}

func baseParams() domainParams {
	return domainParams{
		Name: "default.worker-1-3f2a9", UUID: "3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab", Title: "Machine default/worker-1",
		Type: api.DomainTypeQEMU, VCPUs: 1, MemoryMiB: 1024, Pool: "default",
		Disk: "machineapi-3f2a9c1e-disk.qcow2", Seed: "machineapi-3f2a9c1e-seed.img", MAC: "52:54:00:67:89:ab",
		ConsoleLog: "/var/log/libvirt/qemu/default.worker-1-3f2a9-console.log",
		Meta:       metadata{Namespace: "default", Name: "worker-1", UID: "3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab", Manager: "m", Pool: "default", DomainTypeReason: "set in providerSpec.value.domainType", Created: "2026-05-04T12:00:00Z"},
	}
}

func TestRenderDomain(t *testing.T) {
	userNetParams := func() domainParams {
		p := baseParams()
		p.UserNet = &userNet{Index: 7, ForwardTo: netip.MustParseAddrPort("127.0.0.1:26443")}
		p.Meta.UserNetworkIndex = 7
		return p
	}
	tests := map[string]struct {
		params func() domainParams
		check  func(t *testing.T, d anyXML)
	}{
		"qemu on the loopback user network": {
			params: userNetParams,
			check: func(t *testing.T, d anyXML) {
				if d.attr("type") != "qemu" {
					t.Errorf("type %q", d.attr("type"))
				}
				if got := d.text("features", "tcg", "tb-cache"); got != "256" {
					t.Errorf("tb-cache %q, want 256 MiB", got)
				}
				if got := d.find("cpu")[0].attr("mode"); got != "maximum" {
					t.Errorf("cpu mode %q, want maximum under TCG", got)
				}
				if n := len(d.find("devices", "interface")); n != 0 {
					t.Errorf("%d libvirt interfaces; the user network is QEMU's alone", n)
				}
				var args []string
				for _, a := range d.find("commandline", "arg") {
					if a.XMLName.Space != qemuNamespace {
						t.Errorf("qemu:arg in namespace %q", a.XMLName.Space)
					}
					args = append(args, a.attr("value"))
				}
				want := []string{
					"-netdev", "user,id=machineapi0,net=10.0.7.0/24,restrict=on,guestfwd=tcp:10.0.7.254:6443-cmd:socat - TCP:127.0.0.1:26443",
					"-device", "virtio-net-pci,netdev=machineapi0,mac=52:54:00:67:89:ab,bus=pci.0,addr=0x10",
				}
				if strings.Join(args, "\n") != strings.Join(want, "\n") {
					t.Errorf("qemu:commandline\n%s\nwant\n%s", strings.Join(args, "\n"), strings.Join(want, "\n"))
				}
			},
		},
		"kvm on a libvirt network": {
			params: func() domainParams { p := baseParams(); p.Type = api.DomainTypeKVM; p.Network = "lan"; return p },
			check: func(t *testing.T, d anyXML) {
				if d.attr("type") != "kvm" || len(d.find("features", "tcg")) != 0 {
					t.Errorf("kvm domain with type %q and tcg features %v", d.attr("type"), d.find("features", "tcg"))
				}
				if got := d.find("cpu")[0].attr("mode"); got != "host-passthrough" {
					t.Errorf("cpu mode %q", got)
				}
				ifaces := d.find("devices", "interface")
				if len(ifaces) != 1 || ifaces[0].attr("type") != "network" || ifaces[0].find("source")[0].attr("network") != "lan" ||
					ifaces[0].find("mac")[0].attr("address") != "52:54:00:67:89:ab" || ifaces[0].find("model")[0].attr("type") != "virtio" {
					t.Errorf("interfaces %+v", ifaces)
				}
				if len(d.find("commandline")) != 0 {
					t.Error("a qemu:commandline on a libvirt network")
				}
			},
		},
		"a bridge": {
			params: func() domainParams { p := baseParams(); p.Bridge = "br0"; return p },
			check: func(t *testing.T, d anyXML) {
				ifaces := d.find("devices", "interface")
				if len(ifaces) != 1 || ifaces[0].attr("type") != "bridge" || ifaces[0].find("source")[0].attr("bridge") != "br0" {
					t.Errorf("interfaces %+v", ifaces)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := tc.params()
			data, err := renderDomain(p)
			if err != nil {
				t.Fatal(err)
			}
			var d anyXML
			if err := xml.Unmarshal(data, &d); err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			// What every domain has.
			for path, want := range map[string]string{
				"name": p.Name, "uuid": p.UUID, "vcpu": "1", "memory": "1024", "os/type": "hvm", "on_poweroff": "destroy",
			} {
				if got := d.text(strings.Split(path, "/")...); got != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
			if d.find("memory")[0].attr("unit") != "MiB" || d.find("os", "boot")[0].attr("dev") != "hd" {
				t.Errorf("memory unit or boot device wrong:\n%s", data)
			}
			disks := d.find("devices", "disk")
			if len(disks) != 2 {
				t.Fatalf("%d disks, want the overlay and the seed", len(disks))
			}
			disk, seed := disks[0], disks[1]
			if disk.find("source")[0].attr("volume") != p.Disk || disk.find("driver")[0].attr("type") != "qcow2" || disk.find("target")[0].attr("dev") != "vda" || len(disk.find("readonly")) != 0 {
				t.Errorf("disk %+v", disk)
			}
			if seed.find("source")[0].attr("volume") != p.Seed || seed.find("driver")[0].attr("type") != "raw" || len(seed.find("readonly")) != 1 || seed.text("serial") != "machineapi-seed" {
				t.Errorf("seed %+v", seed)
			}
			if disk.find("source")[0].attr("pool") != "default" || disk.attr("type") != "volume" {
				t.Errorf("disk not a volume of pool default: %+v", disk)
			}
			if got := d.find("devices", "serial", "log")[0].attr("file"); got != p.ConsoleLog {
				t.Errorf("console log %q", got)
			}
			// The metadata reads back as it was written, in the provider's namespace.
			r, err := readDomain(string(data))
			if err != nil {
				t.Fatal(err)
			}
			if r.Metadata.Machine == nil || *r.Metadata.Machine != p.Meta || r.Type != string(p.Type) || r.Name != p.Name {
				t.Errorf("read back %+v (metadata %+v), want metadata %+v", r, r.Metadata.Machine, p.Meta)
			}
			tc.check(t, d)
		})
	}
}

func TestRenderDomainRefusesNoNetworkAndUnknownType(t *testing.T) {
	if _, err := renderDomain(baseParams()); err == nil {
		t.Error("rendered a domain without a network")
	}
	p := baseParams()
	p.Network, p.Type = "default", "xen"
	if _, err := renderDomain(p); err == nil {
		t.Error("rendered a xen domain")
	}
}

func TestReadDomainIgnoresOtherMetadata(t *testing.T) {
	r, err := readDomain(`<domain type="kvm"><name>other</name><metadata><x:machine xmlns:x="https://example.com/other"><x:uid>u</x:uid></x:machine></metadata></domain>`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Metadata.Machine != nil {
		t.Errorf("another tool's metadata read as the provider's: %+v", r.Metadata.Machine)
	}
}

func TestRenderVolumes(t *testing.T) {
	base := volumeRead{Capacity: 3 << 30}
	base.Target.Path, base.Target.Format.Type = "/var/lib/libvirt/images/node.raw", "raw"
	data, err := renderOverlay("d.qcow2", 4<<30, base)
	if err != nil {
		t.Fatal(err)
	}
	var v anyXML
	if err := xml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.text("name") != "d.qcow2" || v.text("capacity") != "4294967296" || v.find("capacity")[0].attr("unit") != "bytes" ||
		v.find("target", "format")[0].attr("type") != "qcow2" || v.text("backingStore", "path") != base.Target.Path ||
		v.find("backingStore", "format")[0].attr("type") != "raw" {
		t.Errorf("overlay:\n%s", data)
	}
	data, err = renderRaw("s.img", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	v = anyXML{}
	if err := xml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.text("capacity") != "1048576" || v.find("target", "format")[0].attr("type") != "raw" || len(v.find("backingStore")) != 0 {
		t.Errorf("raw:\n%s", data)
	}
}

func TestOffersKVM(t *testing.T) {
	caps := func(domains string) string {
		return `<capabilities><host/><guest><os_type>hvm</os_type><arch name='i686'><domain type='qemu'/><domain type='kvm'/></arch></guest>` +
			`<guest><os_type>hvm</os_type><arch name='x86_64'>` + domains + `</arch></guest></capabilities>`
	}
	for name, tc := range map[string]struct {
		caps string
		want bool
	}{
		"kvm and qemu":                  {caps(`<domain type='qemu'/><domain type='kvm'/>`), true},
		"qemu only":                     {caps(`<domain type='qemu'/>`), false},
		"kvm for i686 only, not x86_64": {`<capabilities><guest><arch name='i686'><domain type='kvm'/></arch></guest></capabilities>`, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := offersKVM(tc.caps)
			if err != nil || got != tc.want {
				t.Errorf("offersKVM = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
