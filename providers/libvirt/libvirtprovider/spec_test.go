package libvirtprovider

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
	"machineapi.dev/machine-api/provider"

	api "machineapi.dev/provider-libvirt/api/v1beta1"
)

func machineWith(spec string) *v1beta1.Machine {
	m := &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker-1", UID: "3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab"}}
	if spec != "" {
		m.Spec.ProviderSpec.Value = &runtime.RawExtension{Raw: []byte(spec)}
	}
	return m
}

func TestParseSpec(t *testing.T) {
	tests := map[string]struct {
		spec string
		want string // a fragment of the InvalidConfiguration message; empty: valid
	}{
		"valid":                 {spec: `{"image":{"volume":"node.raw"},"network":{"userLoopback":{}},"domainType":"qemu","memory":"1Gi","vcpus":1}`},
		"empty":                 {spec: "", want: "providerSpec.value is empty: the libvirt provider needs at least image.volume and network"},
		"unknown field":         {spec: `{"image":{"volume":"node.raw"},"network":{"network":"default"},"cpus":2}`, want: `unknown field "cpus"`},
		"not JSON":              {spec: `{`, want: "providerSpec.value: unexpected EOF"},
		"too little memory":     {spec: `{"image":{"volume":"node.raw"},"network":{"network":"default"},"memory":"128Mi"}`, want: "providerSpec.value.memory: Invalid value: \"128Mi\": must be at least 512Mi"},
		"two errors, both said": {spec: `{"image":{},"network":{}}`, want: "providerSpec.value.image.volume: Required value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec, err := parseSpec(machineWith(tc.spec))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if spec.URI != api.DefaultURI || spec.StoragePool != "default" || spec.MemoryMiB() != 1024 {
					t.Errorf("not defaulted: %+v", spec)
				}
				return
			}
			if !provider.IsInvalidConfiguration(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want an InvalidConfiguration saying %q", err, tc.want)
			}
		})
	}
}

func TestLocateSpecPrefersWhereTheInstanceWasMade(t *testing.T) {
	m := machineWith(`{"uri":"qemu+ssh://root@new/system","storagePool":"p","bogus":1}`)
	if uri, pool := locateSpec(m); uri != "qemu+ssh://root@new/system" || pool != "p" {
		t.Errorf("= %q, %q", uri, pool)
	}
	m.Status.ProviderStatus = &runtime.RawExtension{Raw: []byte(`{"uri":"qemu+ssh://root@old/system"}`)}
	if uri, _ := locateSpec(m); uri != "qemu+ssh://root@old/system" {
		t.Errorf("uri %q, want the one the instance was made on", uri)
	}
	if uri, pool := locateSpec(machineWith("")); uri != api.DefaultURI || pool != api.DefaultPool {
		t.Errorf("no spec: %q, %q", uri, pool)
	}
}

func TestNames(t *testing.T) {
	m := machineWith("")
	if got := provider.NodeName(m); got != "worker-1-3f2a9" {
		t.Errorf("nodeName = %q", got)
	}
	if got := domainName(m); got != "default.worker-1-3f2a9" {
		t.Errorf("domainName = %q", got)
	}
	m.Name = strings.Repeat("a", 56) + ".-b"
	if got := provider.NodeName(m); len(got) > 63 || got != strings.Repeat("a", 56)+"-3f2a9" {
		t.Errorf("long nodeName = %q (%d)", got, len(got))
	}
	u, err := domainUUID(m.UID)
	if err != nil || formatUUID(u) != string(m.UID) {
		t.Errorf("UUID round trip: %s, %v", formatUUID(u), err)
	}
	if macAddress(u) != "52:54:00:67:89:ab" {
		t.Errorf("mac %s", macAddress(u))
	}
	if _, err := domainUUID("not-a-uuid"); err == nil {
		t.Error("a UID that is not a UUID was accepted")
	}
}

func TestStatusURIHidesPasswords(t *testing.T) {
	if got := statusURI("qemu+ssh://root:secret@h/system"); got != "" {
		t.Errorf("= %q", got)
	}
	if got := statusURI("qemu+ssh://root@h/system?keyfile=/k"); got != "qemu+ssh://root@h/system?keyfile=/k" {
		t.Errorf("= %q", got)
	}
}
