package libvirtprovider

import (
	"net/netip"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

func TestChooseDomainType(t *testing.T) {
	tests := map[string]struct {
		requested api.DomainType
		kvm       bool
		want      api.DomainType
		reason    string
		invalid   bool
	}{
		"automatic with kvm":      {kvm: true, want: api.DomainTypeKVM, reason: "chosen automatically: the host offers kvm"},
		"automatic without kvm":   {kvm: false, want: api.DomainTypeQEMU, reason: "chosen automatically: the host offers no kvm"},
		"qemu asked where kvm is": {requested: api.DomainTypeQEMU, kvm: true, want: api.DomainTypeQEMU, reason: "set in providerSpec.value.domainType"},
		"kvm asked where it is":   {requested: api.DomainTypeKVM, kvm: true, want: api.DomainTypeKVM, reason: "set in providerSpec.value.domainType"},
		"kvm asked where it is not": {requested: api.DomainTypeKVM, kvm: false, invalid: true,
			reason: "offers no kvm domains for x86_64 guests (no usable /dev/kvm): use qemu"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, reason, err := chooseDomainType(tc.requested, tc.kvm, "qemu:///system")
			if tc.invalid {
				if !provider.IsInvalidConfiguration(err) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("err = %v; want an InvalidConfiguration saying %q", err, tc.reason)
				}
				return
			}
			if err != nil || got != tc.want || !strings.Contains(reason, tc.reason) {
				t.Fatalf("= %q, %q, %v; want %q, %q", got, reason, err, tc.want, tc.reason)
			}
		})
	}
}

func TestGuestEndpoint(t *testing.T) {
	loopback := &rest.Config{Host: "https://127.0.0.1:26443"}
	named := &rest.Config{Host: "https://api.example.com", TLSClientConfig: rest.TLSClientConfig{ServerName: "kubernetes"}}
	user := func(u api.UserLoopbackNetwork) api.ProviderSpec {
		return api.ProviderSpec{Network: api.NetworkAttachment{UserLoopback: &u}}
	}
	lan := api.ProviderSpec{Network: api.NetworkAttachment{Network: "lan"}}
	tests := map[string]struct {
		spec    api.ProviderSpec
		cfg     *rest.Config
		flagURL string
		want    endpoint
		wantErr string
		invalid bool
	}{
		"user network forwards to the manager's loopback API server": {
			spec: user(api.UserLoopbackNetwork{}), cfg: loopback,
			want: endpoint{tlsServerName: "127.0.0.1", forwardTo: mustAddrPort("127.0.0.1:26443")},
		},
		"user network with its own forward and server name": {
			spec: user(api.UserLoopbackNetwork{APIServer: "127.0.0.2:6443", TLSServerName: "kubernetes"}), cfg: loopback,
			want: endpoint{tlsServerName: "kubernetes", forwardTo: mustAddrPort("127.0.0.2:6443")},
		},
		"user network with a manager off loopback and no forward": {
			spec: user(api.UserLoopbackNetwork{}), cfg: named, invalid: true,
			wantErr: "userLoopback.apiServer is empty and the manager reaches its API server at api.example.com:443, which is not on the host's loopback",
		},
		"a libvirt network uses the manager's address": {
			spec: lan, cfg: named, want: endpoint{server: "https://api.example.com:443", tlsServerName: "kubernetes"},
		},
		"a libvirt network uses --libvirt-apiserver-url": {
			spec: lan, cfg: loopback, flagURL: "https://192.0.2.10:6443", want: endpoint{server: "https://192.0.2.10:6443"},
		},
		"a libvirt network cannot use the manager's loopback": {
			spec: lan, cfg: loopback, wantErr: "run the manager with --libvirt-apiserver-url",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := guestEndpoint(tc.spec, tc.cfg, tc.flagURL)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || provider.IsInvalidConfiguration(err) != tc.invalid {
					t.Fatalf("err = %v (invalid configuration: %v); want one saying %q (invalid configuration: %v)", err, provider.IsInvalidConfiguration(err), tc.wantErr, tc.invalid)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func mustAddrPort(s string) (a netip.AddrPort) {
	a, err := api.LoopbackAPIServer(s)
	if err != nil {
		panic(err)
	}
	return a
}
