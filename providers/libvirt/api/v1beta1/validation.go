package v1beta1

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// transports are the libvirt URI transports go-libvirt can dial ("" is the local socket).
var transports = map[string]bool{"": true, "unix": true, "ssh": true, "libssh": true, "libssh2": true, "tcp": true, "tls": true}

// Validate checks a defaulted ProviderSpec; each error says what to change. path is where the
// spec sits (providerSpec.value).
func (s *ProviderSpec) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateURI(s.URI, path.Child("uri"))...)
	if s.VCPUs < 1 || s.VCPUs > 255 {
		errs = append(errs, field.Invalid(path.Child("vcpus"), s.VCPUs, "must be between 1 and 255"))
	}
	if s.Memory == nil || s.Memory.Cmp(MinMemory) < 0 {
		errs = append(errs, field.Invalid(path.Child("memory"), quantity(s.Memory),
			fmt.Sprintf("must be at least %s: the node image's systemd, containerd and kubelet use about 300 MiB before any pod", MinMemory.String())))
	}
	if s.Image.Volume == "" {
		errs = append(errs, field.Required(path.Child("image", "volume"), "name the storage volume holding the node image (make node-image builds it; hack/import-node-image.sh puts it in a pool)"))
	}
	errs = append(errs, validateName(s.Image.Volume, path.Child("image", "volume"))...)
	errs = append(errs, validateName(s.Image.Pool, path.Child("image", "pool"))...)
	errs = append(errs, validateName(s.StoragePool, path.Child("storagePool"))...)
	if s.DiskSize != nil && s.DiskSize.Sign() <= 0 {
		errs = append(errs, field.Invalid(path.Child("diskSize"), quantity(s.DiskSize), "must be positive, and at least the image's size"))
	}
	switch s.DomainType {
	case "", DomainTypeKVM, DomainTypeQEMU:
	default:
		errs = append(errs, field.NotSupported(path.Child("domainType"), s.DomainType, []DomainType{DomainTypeKVM, DomainTypeQEMU, ""}))
	}
	errs = append(errs, s.Network.validate(path.Child("network"))...)
	for i, t := range s.RegisterWithTaints {
		errs = append(errs, validateTaint(t, path.Child("registerWithTaints").Index(i))...)
	}
	return errs
}

func validateURI(uri string, path *field.Path) field.ErrorList {
	u, err := url.Parse(uri)
	if err != nil {
		return field.ErrorList{field.Invalid(path, uri, fmt.Sprintf("not a URI (%v): use qemu:///system or qemu+ssh://user@host/system", err))}
	}
	driver, transport, _ := strings.Cut(u.Scheme, "+")
	switch {
	case driver != "qemu":
		return field.ErrorList{field.Invalid(path, uri, "the provider drives QEMU through libvirt: use a qemu:// URI such as qemu:///system or qemu+ssh://user@host/system")}
	case !transports[transport]:
		return field.ErrorList{field.Invalid(path, uri, fmt.Sprintf("transport %q is not one go-libvirt dials: use qemu:///system, qemu+ssh://, qemu+libssh://, qemu+tcp:// or qemu+tls://", transport))}
	case u.Path != "/system":
		return field.ErrorList{field.Invalid(path, uri, "the provider manages the system instance of libvirtd: the URI's path must be /system (qemu:///system, qemu+ssh://user@host/system)")}
	case transport == "unix" && u.Host != "":
		return field.ErrorList{field.Invalid(path, uri, "a qemu+unix:// URI names no host: use qemu+unix:///system")}
	case transport != "" && transport != "unix" && u.Host == "":
		return field.ErrorList{field.Invalid(path, uri, fmt.Sprintf("a qemu+%s:// URI must name the host: qemu+%s://user@host/system", transport, transport))}
	}
	return nil
}

// validateName refuses names libvirt would read as paths.
func validateName(name string, path *field.Path) field.ErrorList {
	if strings.ContainsAny(name, "/\x00") {
		return field.ErrorList{field.Invalid(path, name, "a libvirt pool or volume name, not a path: use the name virsh pool-list or vol-list shows")}
	}
	return nil
}

func (n *NetworkAttachment) validate(path *field.Path) field.ErrorList {
	set := 0
	for _, ok := range []bool{n.Network != "", n.Bridge != "", n.UserLoopback != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return field.ErrorList{field.Invalid(path, fmt.Sprintf("%d attachments", set),
			"set exactly one of network (a libvirt network's name), bridge (a host bridge's name) or userLoopback (the loopback-only test network)")}
	}
	var errs field.ErrorList
	if strings.ContainsAny(n.Network+n.Bridge, "/ \x00") {
		errs = append(errs, field.Invalid(path, n.Network+n.Bridge, "a libvirt network or bridge name (virsh net-list, ip link show type bridge)"))
	}
	if u := n.UserLoopback; u != nil && u.APIServer != "" {
		if _, err := LoopbackAPIServer(u.APIServer); err != nil {
			errs = append(errs, field.Invalid(path.Child("userLoopback", "apiServer"), u.APIServer, err.Error()))
		}
	}
	return errs
}

// LoopbackAPIServer parses address:port and checks that it is on loopback (127.0.0.0/8), the
// only place the user-mode network may forward to.
func LoopbackAPIServer(hostport string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not address:port (%w): give the loopback address and port the host's kube-apiserver listens on, such as 127.0.0.1:6443", err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !addr.Is4() || !addr.IsLoopback() {
		return netip.AddrPort{}, fmt.Errorf("%q is not a 127.0.0.0/8 address: the user-mode network forwards to the host's loopback only", host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return netip.AddrPort{}, fmt.Errorf("port %q is not a port number", port)
	}
	return netip.AddrPortFrom(addr, uint16(p)), nil
}

func validateTaint(t corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(t.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), t.Key, msg))
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		errs = append(errs, field.Invalid(path.Child("value"), t.Value, msg))
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(path.Child("effect"), t.Effect,
			[]corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
	}
	return errs
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "<unset>"
	}
	return q.String()
}
