package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ProviderSpec is a libvirt Machine's spec.providerSpec.value, or a MachineClass's providerSpec:
// on which libvirt host the Machine's virtual machine runs, how big it is, which node image it
// boots and how it is attached to a network. Unknown fields are refused.
type ProviderSpec struct {
	// uri is the libvirt connection URI of the host the virtual machine runs on:
	// qemu:///system (the default) for the libvirtd of the machine the manager runs on, or
	// qemu+ssh://user@host/system?keyfile=/path/to/key for a remote one. The ssh transport is
	// go-libvirt's own SSH client: it needs only sshd on the host (stream-local forwarding to
	// libvirt's socket, the OpenSSH default), does not read ~/.ssh/config, and checks host keys
	// against ~/.ssh/known_hosts unless the URI says no_verify=1. qemu+libssh://, qemu+tcp:// and
	// qemu+tls:// are accepted as go-libvirt reads them.
	// +optional
	URI string `json:"uri,omitempty"`

	// vcpus is the number of virtual CPUs, 1 to 255. Default 2.
	// +optional
	VCPUs int32 `json:"vcpus,omitempty"`

	// memory is the virtual machine's memory, at least 512Mi (the node image's systemd, containerd
	// and kubelet use about 300 MiB before any pod). Default 2Gi. Rounded up to a whole MiB.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// image is the storage volume holding the bootable node image (make node-image builds it;
	// providers/libvirt/hack/import-node-image.sh puts it in a pool). The virtual machine's disk is
	// a copy-on-write overlay of it, so the volume must stay as it is while Machines use it.
	// +required
	Image ImageVolume `json:"image"`

	// diskSize is the virtual size of the virtual machine's disk (the copy-on-write overlay), at
	// least the image's size. Default: the image's size.
	// +optional
	DiskSize *resource.Quantity `json:"diskSize,omitempty"`

	// storagePool is the storage pool the Machine's own volumes (its disk overlay and its seed)
	// are created in. Default: the image's pool.
	// +optional
	StoragePool string `json:"storagePool,omitempty"`

	// domainType is the libvirt domain type: kvm (hardware virtualisation), qemu (QEMU's emulator,
	// TCG: no /dev/kvm needed, several times slower), or empty to choose automatically: kvm when
	// the host's capabilities offer it for x86_64, else qemu. status.providerStatus says which was
	// used and why. Set qemu on hosts whose /dev/kvm cannot run a stock guest kernel (such as
	// PVM hosts, where kvm is offered but the guest hangs).
	// +optional
	DomainType DomainType `json:"domainType,omitempty"`

	// network attaches the virtual machine to a network, as the host's administrator provides
	// it: exactly one of network, bridge or userLoopback.
	// +required
	Network NetworkAttachment `json:"network"`

	// registerWithTaints are taints the kubelet registers its Node with (its
	// registerWithTaints), after the manager's initialization taint
	// (node.machineapi.dev/uninitialized:NoSchedule unless --libvirt-initialization-taint-key
	// says otherwise), which the node linker removes once the Node carries the Machine's labels
	// and spec.taints. None by default: the Machine's spec.taints are the way to taint its Node.
	// +optional
	// +listType=atomic
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints,omitempty"`
}

// ImageVolume names a libvirt storage volume.
type ImageVolume struct {
	// pool is the storage pool holding the volume. Default: default.
	// +optional
	Pool string `json:"pool,omitempty"`
	// volume is the volume's name in the pool.
	// +required
	Volume string `json:"volume"`
}

// DomainType is a libvirt domain type.
type DomainType string

const (
	// DomainTypeKVM runs the guest with hardware virtualisation (/dev/kvm).
	DomainTypeKVM DomainType = "kvm"
	// DomainTypeQEMU runs the guest in QEMU's emulator (TCG).
	DomainTypeQEMU DomainType = "qemu"
)

// NetworkAttachment is how the virtual machine's one network interface is attached. Set exactly
// one field.
type NetworkAttachment struct {
	// network is the name of a libvirt network on the host (virsh net-list). The guest gets its
	// address by DHCP; the provider reads it from the network's leases and records it as the
	// Machine's InternalIP once the guest has one.
	// +optional
	Network string `json:"network,omitempty"`

	// bridge is the name of a Linux bridge on the host the interface is plugged into. The guest
	// gets its address by DHCP from whatever serves that segment; the provider records it when
	// libvirt can see it (the host's ARP table).
	// +optional
	Bridge string `json:"bridge,omitempty"`

	// userLoopback is QEMU's user-mode network with restrict=on, for tests and single-host
	// set-ups: the guest can reach nothing but one forward to the host's kube-apiserver on
	// loopback, and nothing can reach the guest. Each virtual machine gets its own subnet
	// 10.0.N.0/24 (N unique among this manager's virtual machines on the host), the address
	// 10.0.N.15 and reaches the API server at 10.0.N.254:6443. It is passed to QEMU through
	// libvirt's <qemu:commandline> (the domain is tainted custom-argv) and needs
	// seccomp_sandbox = 0 in the host's qemu.conf (QEMU's sandbox kills QEMU when it starts the
	// forward's socat).
	// +optional
	UserLoopback *UserLoopbackNetwork `json:"userLoopback,omitempty"`
}

// UserLoopbackNetwork configures the user-mode test network.
type UserLoopbackNetwork struct {
	// apiServer is the address:port of the kube-apiserver on the libvirt host's loopback
	// (127.0.0.0/8) that the guest's one forward leads to. Default: the address of the API
	// server the manager uses, when it is a loopback address.
	// +optional
	APIServer string `json:"apiServer,omitempty"`

	// tlsServerName is the name the guest checks the API server's serving certificate against,
	// since it reaches the API server at 10.0.N.254. Default: the host the manager reaches its API
	// server at (its TLS server name when it has one).
	// +optional
	TLSServerName string `json:"tlsServerName,omitempty"`
}

// ProviderStatus is what the libvirt provider reports in a Machine's status.providerStatus.
type ProviderStatus struct {
	// uri is the libvirt connection URI of the host the virtual machine runs on.
	// +optional
	URI string `json:"uri,omitempty"`
	// domainName is the libvirt domain's name (virsh dominfo <name>); its UUID is the Machine's UID.
	// +optional
	DomainName string `json:"domainName,omitempty"`
	// domainType is the domain type the virtual machine runs with: kvm or qemu.
	// +optional
	DomainType DomainType `json:"domainType,omitempty"`
	// domainTypeReason says why: set in the providerSpec, or chosen from the host's capabilities.
	// +optional
	DomainTypeReason string `json:"domainTypeReason,omitempty"`
	// state is the domain's state as libvirt reports it: running, paused, shut off, crashed, ...
	// +optional
	State string `json:"state,omitempty"`
	// userNetworkIndex is N of the user-mode network's 10.0.N.0/24, when the Machine uses it.
	// +optional
	UserNetworkIndex int32 `json:"userNetworkIndex,omitempty"`
}
