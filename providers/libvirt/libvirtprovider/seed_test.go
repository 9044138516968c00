package libvirtprovider

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

func TestSeedRoundTrip(t *testing.T) {
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n")
	in := seedInput{
		Hostname: "worker-1-3f2a9", ProviderID: "libvirt:///3f2a9c1e-7b4d-4c8e-9a1f-0123456789ab", NodeIP: "10.0.7.15",
		CAData: []byte("CA"), BootstrapKubeconfig: kubeconfig, Kubeconfig: []byte("kubelet's"), StaticAddress: "10.0.7.15/24", Gateway: "10.0.7.2",
		RegisterWithTaints: []corev1.Taint{{Key: "example.com/init", Effect: corev1.TaintEffectNoSchedule}},
	}
	files, err := seedFiles(in)
	if err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	data, err := writeSeed(files, mtime)
	if err != nil {
		t.Fatal(err)
	}
	if len(data)%(1<<20) != 0 {
		t.Errorf("the seed is %d bytes, not a whole number of MiB", len(data))
	}
	type entry struct {
		mode    int64
		dir     bool
		content string
	}
	got := map[string]entry{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Format != tar.FormatUSTAR && h.Format != tar.FormatUnknown {
			t.Errorf("%s: format %v, want ustar", h.Name, h.Format)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: owner %d:%d time %s", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		body, _ := io.ReadAll(tr)
		got[h.Name] = entry{mode: h.Mode, dir: h.Typeflag == tar.TypeDir, content: string(body)}
		order = append(order, h.Name)
	}
	// Each directory comes before what it holds.
	for i, name := range order {
		for _, earlier := range order[i:] {
			if earlier != name && strings.HasPrefix(name, earlier) && strings.HasSuffix(earlier, "/") {
				t.Errorf("%s comes before its parent %s", name, earlier)
			}
		}
	}
	for _, d := range []string{"files/", "files/etc/", "files/etc/kubernetes/", "files/etc/kubernetes/pki/", "files/etc/machineapi/", "files/etc/systemd/network/", "files/var/lib/kubelet/"} {
		if e, ok := got[d]; !ok || !e.dir || e.mode != 0o755 {
			t.Errorf("directory %s: %+v (present %v)", d, e, ok)
		}
	}
	want := map[string]entry{
		"files/etc/hostname":                          {mode: 0o644, content: "worker-1-3f2a9\n"},
		"files/etc/kubernetes/pki/ca.crt":             {mode: 0o644, content: "CA"},
		"files/etc/kubernetes/bootstrap-kubelet.conf": {mode: 0o600, content: string(kubeconfig)},
		"files/etc/kubernetes/kubelet.conf":           {mode: 0o600, content: "kubelet's"},
		"files/etc/machineapi/kubelet.env":            {mode: 0o644, content: "KUBELET_ARGS=\"--hostname-override=worker-1-3f2a9 --node-ip=10.0.7.15\"\n"},
		"files/etc/systemd/network/10-machineapi.network": {mode: 0o644,
			content: "[Match]\nName=en*\n\n[Network]\nAddress=10.0.7.15/24\nGateway=10.0.7.2\n"},
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
	var kc map[string]any
	if err := yaml.Unmarshal([]byte(got["files/var/lib/kubelet/config.yaml"].content), &kc); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"kind": "KubeletConfiguration", "apiVersion": "kubelet.config.k8s.io/v1beta1", "providerID": in.ProviderID,
		"cgroupDriver": "systemd", "failSwapOn": false, "rotateCertificates": true,
	} {
		if kc[key] != want {
			t.Errorf("kubelet config %s = %v, want %v", key, kc[key], want)
		}
	}
	authn := kc["authentication"].(map[string]any)
	if authn["anonymous"].(map[string]any)["enabled"] != false || authn["webhook"].(map[string]any)["enabled"] != true ||
		authn["x509"].(map[string]any)["clientCAFile"] != "/etc/kubernetes/pki/ca.crt" || kc["authorization"].(map[string]any)["mode"] != "Webhook" {
		t.Errorf("the kubelet's API is not closed to anonymous and unauthorized clients: %v %v", authn, kc["authorization"])
	}
	taints := kc["registerWithTaints"].([]any)
	if len(taints) != 1 || taints[0].(map[string]any)["key"] != "example.com/init" {
		t.Errorf("registerWithTaints = %v", taints)
	}
}

func TestSeedWithoutTaintsOrStaticNetwork(t *testing.T) {
	files, err := seedFiles(seedInput{Hostname: "h", ProviderID: "libvirt:///u", CAData: []byte("CA"), BootstrapKubeconfig: []byte("k"), Kubeconfig: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		switch f.Path {
		case networkPath:
			t.Error("a static network file without a static address: the image's DHCP default must apply")
		case kubeletEnvPath:
			if string(f.Content) != "KUBELET_ARGS=\"--hostname-override=h\"\n" {
				t.Errorf("kubelet.env %q", f.Content)
			}
		case kubeletConfigPath:
			if strings.Contains(string(f.Content), "registerWithTaints") {
				t.Errorf("the kubelet registers with taints nobody asked for:\n%s", f.Content)
			}
		}
	}
}

func TestSeedNeedsCredentials(t *testing.T) {
	if _, err := seedFiles(seedInput{Hostname: "h", ProviderID: "p"}); err == nil {
		t.Error("a seed without CA and kubeconfig")
	}
}

// TestBootstrapKubeconfigInSeedLoads checks that the kubeconfig the provider renders for the user
// network is one the kubelet can load.
func TestBootstrapKubeconfigInSeedLoads(t *testing.T) {
	cfg, err := clientcmd.Load([]byte(`apiVersion: v1
kind: Config
clusters:
- name: default
  cluster: {server: "https://10.0.7.254:6443", tls-server-name: "127.0.0.1", certificate-authority-data: Q0E=}
users:
- name: kubelet-bootstrap
  user: {token: abcdef.0123456789abcdef}
contexts:
- name: default
  context: {cluster: default, user: kubelet-bootstrap}
current-context: default
`))
	if err != nil || cfg.Clusters["default"].TLSServerName != "127.0.0.1" {
		t.Fatalf("%v %+v", err, cfg)
	}
}

// TestKubeletKubeconfigKeepsTheServerName protects a rebooted guest's way back to the API server:
// the kubelet's own kubeconfig, which the seed writes at every boot, has the bootstrap
// kubeconfig's server, CA and TLS server name and the certificate the kubelet's bootstrap stores;
// while that certificate does not exist (the first boot) it does not load, so the kubelet
// bootstraps with the token instead.
func TestKubeletKubeconfigKeepsTheServerName(t *testing.T) {
	data, err := kubeletKubeconfig("https://10.0.7.254:6443", []byte("CA"), "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	rest := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{})
	if _, err := rest.ClientConfig(); err == nil || !strings.Contains(err.Error(), kubeletClientCertPath) {
		t.Errorf("loading it without the certificate: %v; want it refused, naming %s", err, kubeletClientCertPath)
	}
	cluster, user := raw.Clusters[raw.Contexts[raw.CurrentContext].Cluster], raw.AuthInfos[raw.Contexts[raw.CurrentContext].AuthInfo]
	if cluster.Server != "https://10.0.7.254:6443" || cluster.TLSServerName != "kubernetes" || string(cluster.CertificateAuthorityData) != "CA" {
		t.Errorf("cluster %+v", cluster)
	}
	if user.ClientCertificate != "/var/lib/kubelet/pki/kubelet-client-current.pem" || user.ClientKey != user.ClientCertificate || user.Token != "" {
		t.Errorf("user %+v: want the kubelet's rotated certificate and key, no token", user)
	}
}

// TestRegisterWithTaints protects what a Node registers with: the initialization taint first,
// unless the manager turns it off, then the providerSpec's, without duplicates.
func TestRegisterWithTaints(t *testing.T) {
	const init = "node.machineapi.dev/uninitialized"
	noSchedule := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule} }
	for name, tc := range map[string]struct {
		initKey string
		spec    []corev1.Taint
		want    []corev1.Taint
	}{
		"the initialization taint by default":      {initKey: init, want: []corev1.Taint{noSchedule(init)}},
		"then the providerSpec's":                  {initKey: init, spec: []corev1.Taint{noSchedule("a")}, want: []corev1.Taint{noSchedule(init), noSchedule("a")}},
		"the providerSpec's own copy is not added": {initKey: init, spec: []corev1.Taint{noSchedule(init), noSchedule("a")}, want: []corev1.Taint{noSchedule(init), noSchedule("a")}},
		"turned off: only the providerSpec's":      {spec: []corev1.Taint{noSchedule("a")}, want: []corev1.Taint{noSchedule("a")}},
		"turned off and none asked for":            {},
	} {
		t.Run(name, func(t *testing.T) {
			got := registerWithTaints(tc.initKey, tc.spec)
			if len(got) != len(tc.want) {
				t.Fatalf("registerWithTaints() = %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].MatchTaint(&tc.want[i]) || got[i].Value != tc.want[i].Value {
					t.Errorf("registerWithTaints() = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestDefaultInitializationTaint: the manager registers Nodes with the taint the node linker
// removes, unless told otherwise.
func TestDefaultInitializationTaint(t *testing.T) {
	if got := DefaultOptions().InitializationTaintKey; got != "node.machineapi.dev/uninitialized" {
		t.Errorf("DefaultOptions().InitializationTaintKey = %q, want the node linker's node.machineapi.dev/uninitialized", got)
	}
}
