package v1beta1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func valid() ProviderSpec {
	s := ProviderSpec{Image: ImageVolume{Volume: "node.raw"}, Network: NetworkAttachment{Network: "default"}}
	s.Default()
	return s
}

func TestDefault(t *testing.T) {
	s := ProviderSpec{Image: ImageVolume{Volume: "node.raw"}}
	s.Default()
	if s.URI != "qemu:///system" || s.VCPUs != 2 || s.Memory.String() != "2Gi" || s.Image.Pool != "default" || s.StoragePool != "default" {
		t.Errorf("defaults: %+v", s)
	}
	s = ProviderSpec{Image: ImageVolume{Pool: "images", Volume: "node.raw"}}
	s.Default()
	if s.StoragePool != "images" {
		t.Errorf("storagePool defaults to %q, want the image's pool", s.StoragePool)
	}
}

func TestMemoryMiBRoundsUp(t *testing.T) {
	for q, want := range map[string]int64{"512Mi": 512, "1Gi": 1024, "1000M": 954, "513M": 490} {
		m := resource.MustParse(q)
		s := ProviderSpec{Memory: &m}
		if got := s.MemoryMiB(); got != want {
			t.Errorf("%s = %d MiB, want %d", q, got, want)
		}
	}
}

// TestValidate checks that each invalid field is refused with a message that says what to change.
func TestValidate(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := map[string]struct {
		mutate func(*ProviderSpec)
		want   string // a fragment of the message; empty: valid
	}{
		"defaults with an image and a network": {mutate: func(*ProviderSpec) {}},
		"remote over ssh":                      {mutate: func(s *ProviderSpec) { s.URI = "qemu+ssh://root@host:2222/system?keyfile=/k&no_verify=1" }},
		"a bridge":                             {mutate: func(s *ProviderSpec) { s.Network = NetworkAttachment{Bridge: "br0"} }},
		"the loopback network, defaults":       {mutate: func(s *ProviderSpec) { s.Network = NetworkAttachment{UserLoopback: &UserLoopbackNetwork{}} }},
		"the loopback network on 127.0.0.5": {mutate: func(s *ProviderSpec) {
			s.Network = NetworkAttachment{UserLoopback: &UserLoopbackNetwork{APIServer: "127.0.0.5:6443"}}
		}},
		"qemu":          {mutate: func(s *ProviderSpec) { s.DomainType = DomainTypeQEMU }},
		"512Mi exactly": {mutate: func(s *ProviderSpec) { s.Memory = q("512Mi") }},
		"a taint": {mutate: func(s *ProviderSpec) {
			s.RegisterWithTaints = []corev1.Taint{{Key: "machineapi.dev/initializing", Effect: corev1.TaintEffectNoSchedule}}
		}},

		"too little memory":      {mutate: func(s *ProviderSpec) { s.Memory = q("256Mi") }, want: "memory: Invalid value: \"256Mi\": must be at least 512Mi"},
		"no image":               {mutate: func(s *ProviderSpec) { s.Image.Volume = "" }, want: "image.volume: Required value: name the storage volume holding the node image (make node-image"},
		"a path for an image":    {mutate: func(s *ProviderSpec) { s.Image.Volume = "/var/lib/node.raw" }, want: "not a path"},
		"no vCPU":                {mutate: func(s *ProviderSpec) { s.VCPUs = -1 }, want: "vcpus: Invalid value: -1: must be between 1 and 255"},
		"a xen URI":              {mutate: func(s *ProviderSpec) { s.URI = "xen:///system" }, want: "use a qemu:// URI"},
		"the session libvirtd":   {mutate: func(s *ProviderSpec) { s.URI = "qemu:///session" }, want: "path must be /system"},
		"an unknown transport":   {mutate: func(s *ProviderSpec) { s.URI = "qemu+ext://host/system" }, want: `transport "ext" is not one go-libvirt dials`},
		"ssh without a host":     {mutate: func(s *ProviderSpec) { s.URI = "qemu+ssh:///system" }, want: "must name the host"},
		"an unknown domain type": {mutate: func(s *ProviderSpec) { s.DomainType = "xen" }, want: `domainType: Unsupported value: "xen"`},
		"a zero disk":            {mutate: func(s *ProviderSpec) { s.DiskSize = q("0") }, want: "diskSize: Invalid value: \"0\": must be positive"},
		"no network":             {mutate: func(s *ProviderSpec) { s.Network = NetworkAttachment{} }, want: "set exactly one of network"},
		"two networks": {mutate: func(s *ProviderSpec) {
			s.Network = NetworkAttachment{Network: "default", UserLoopback: &UserLoopbackNetwork{}}
		}, want: "2 attachments"},
		"forwarding off loopback": {mutate: func(s *ProviderSpec) {
			s.Network = NetworkAttachment{UserLoopback: &UserLoopbackNetwork{APIServer: "10.1.2.3:6443"}}
		}, want: "is not a 127.0.0.0/8 address: the user-mode network forwards to the host's loopback only"},
		"forwarding without a port": {mutate: func(s *ProviderSpec) {
			s.Network = NetworkAttachment{UserLoopback: &UserLoopbackNetwork{APIServer: "127.0.0.1"}}
		}, want: "not address:port"},
		"a taint without effect": {mutate: func(s *ProviderSpec) {
			s.RegisterWithTaints = []corev1.Taint{{Key: "a"}}
		}, want: "registerWithTaints[0].effect: Unsupported value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := valid()
			tc.mutate(&s)
			errs := s.Validate(field.NewPath("providerSpec", "value"))
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v; want one saying %q", errs, tc.want)
			}
		})
	}
}
