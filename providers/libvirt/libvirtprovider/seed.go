package libvirtprovider

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// The seed disk (docs/providers/libvirt.md, and the node image's machineapi-seed.service): a
// read-only raw disk with this serial holding a ustar archive from byte 0, padded with zeros to a
// whole MiB. Its members files/<path> are copied over / at every boot, before networking,
// containerd and the kubelet start.
const (
	seedSerial    = "machineapi-seed"
	seedAlignment = 1 << 20
	seedPrefix    = "files/"
)

// seedFile is one file the seed writes into the guest.
type seedFile struct {
	Path    string // absolute, in the guest
	Mode    int64
	Content []byte
}

// seedInput is what a Machine's seed says.
type seedInput struct {
	Hostname            string
	ProviderID          string
	NodeIP              string // empty when the guest gets its address by DHCP
	CAData              []byte
	BootstrapKubeconfig []byte
	// Kubeconfig is the kubelet's own (kubeletKubeconfig).
	Kubeconfig         []byte
	RegisterWithTaints []corev1.Taint
	// StaticAddress (10.0.N.15/24) and Gateway, when set, configure the guest's network
	// statically instead of the image's DHCP default.
	StaticAddress, Gateway string
}

// Paths in the guest, as the node image's kubelet.service expects them.
const (
	hostnamePath            = "/etc/hostname"
	bootstrapKubeconfigPath = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeletKubeconfigPath   = "/etc/kubernetes/kubelet.conf"
	// kubeletClientCertPath is the client certificate and key the kubelet's TLS bootstrap stores
	// and its rotation renews (its default --cert-dir).
	kubeletClientCertPath = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	caPath                = "/etc/kubernetes/pki/ca.crt"
	kubeletConfigPath     = "/var/lib/kubelet/config.yaml"
	kubeletEnvPath        = "/etc/machineapi/kubelet.env"
	networkPath           = "/etc/systemd/network/10-machineapi.network"
)

// kubeletConfiguration is the part of kubelet.config.k8s.io/v1beta1 KubeletConfiguration the
// seed sets (the provider does not import the kubelet's types).
type kubeletConfiguration struct {
	APIVersion         string                `json:"apiVersion"`
	Kind               string                `json:"kind"`
	ProviderID         string                `json:"providerID"`
	CgroupDriver       string                `json:"cgroupDriver"`
	Authentication     kubeletAuthentication `json:"authentication"`
	Authorization      kubeletAuthorization  `json:"authorization"`
	FailSwapOn         bool                  `json:"failSwapOn"`
	RotateCertificates bool                  `json:"rotateCertificates"`
	RegisterWithTaints []corev1.Taint        `json:"registerWithTaints,omitempty"`
}

type kubeletAuthentication struct {
	X509      kubeletX509   `json:"x509"`
	Webhook   kubeletSwitch `json:"webhook"`
	Anonymous kubeletSwitch `json:"anonymous"`
}

type kubeletX509 struct {
	ClientCAFile string `json:"clientCAFile"`
}

type kubeletSwitch struct {
	Enabled bool `json:"enabled"`
}

type kubeletAuthorization struct {
	Mode string `json:"mode"`
}

// kubeletKubeconfig renders the kubelet's own kubeconfig (its --kubeconfig): the bootstrap
// kubeconfig's cluster — server, CA and TLS server name — with the client certificate its TLS
// bootstrap got. The kubelet writes that file itself once bootstrapped, but without the TLS server
// name (writeKubeconfigFromBootstrapping in k8s.io/kubernetes pkg/kubelet/certificate/bootstrap,
// v1.37.2), so a guest that reaches the API server at an address its serving certificate does not
// name (10.0.N.254 on the user network) could not reconnect after a reboot. The seed writes it at
// every boot: at the first, the certificate does not exist yet, so the kubelet bootstraps (and
// overwrites the file, keeping the name in memory); at every later boot it finds it valid.
func kubeletKubeconfig(server string, caData []byte, tlsServerName string) ([]byte, error) {
	const name = "default"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData, TLSServerName: tlsServerName}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: kubeletClientCertPath, ClientKey: kubeletClientCertPath}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

// kubeletConfig renders the kubelet's configuration: the providerID the Machine records, the
// systemd cgroup driver of the image's containerd, certificates rotated from the bootstrap one
// on, and the kubelet's own API reachable only by clients with a certificate of the cluster CA or a
// token the API server vouches for, each request authorized by the API server (as kubeadm
// configures it).
func kubeletConfig(in seedInput) ([]byte, error) {
	c := kubeletConfiguration{
		APIVersion:         "kubelet.config.k8s.io/v1beta1",
		Kind:               "KubeletConfiguration",
		ProviderID:         in.ProviderID,
		CgroupDriver:       "systemd",
		Authorization:      kubeletAuthorization{Mode: "Webhook"},
		FailSwapOn:         false,
		RotateCertificates: true,
		RegisterWithTaints: in.RegisterWithTaints,
	}
	c.Authentication.X509.ClientCAFile = caPath
	c.Authentication.Webhook.Enabled = true
	c.Authentication.Anonymous.Enabled = false
	return yaml.Marshal(c)
}

// seedFiles are the files a Machine's seed writes: its hostname, the cluster CA, the bootstrap
// kubeconfig and the kubelet's own, the kubelet's configuration and arguments, and the static network on the user network.
func seedFiles(in seedInput) ([]seedFile, error) {
	switch {
	case in.Hostname == "", in.ProviderID == "":
		return nil, fmt.Errorf("a seed needs a hostname and a providerID")
	case len(in.CAData) == 0, len(in.BootstrapKubeconfig) == 0, len(in.Kubeconfig) == 0:
		return nil, fmt.Errorf("a seed needs the cluster CA, a bootstrap kubeconfig and the kubelet's kubeconfig")
	}
	kubelet, err := kubeletConfig(in)
	if err != nil {
		return nil, err
	}
	args := []string{"--hostname-override=" + in.Hostname}
	if in.NodeIP != "" {
		args = append(args, "--node-ip="+in.NodeIP)
	}
	files := []seedFile{
		{Path: hostnamePath, Mode: 0o644, Content: []byte(in.Hostname + "\n")},
		{Path: caPath, Mode: 0o644, Content: in.CAData},
		{Path: bootstrapKubeconfigPath, Mode: 0o600, Content: in.BootstrapKubeconfig},
		{Path: kubeletKubeconfigPath, Mode: 0o600, Content: in.Kubeconfig},
		{Path: kubeletConfigPath, Mode: 0o644, Content: kubelet},
		{Path: kubeletEnvPath, Mode: 0o644, Content: []byte(fmt.Sprintf("KUBELET_ARGS=%q\n", strings.Join(args, " ")))},
	}
	if in.StaticAddress != "" {
		files = append(files, seedFile{Path: networkPath, Mode: 0o644, Content: []byte(fmt.Sprintf(
			"[Match]\nName=en*\n\n[Network]\nAddress=%s\nGateway=%s\n", in.StaticAddress, in.Gateway))})
	}
	return files, nil
}

// writeSeed archives files as the seed disk's content: files/<path> for each file, after a
// directory entry (0755) for each of its parents, owned by root, padded to a whole MiB.
func writeSeed(files []seedFile, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var dirList []string
	for _, f := range files {
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				dirList = append(dirList, d)
			}
		}
	}
	sort.Strings(dirList) // parents first
	header := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime.UTC().Truncate(time.Second),
			Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(header(seedPrefix, 0o755, tar.TypeDir, 0)); err != nil {
		return nil, err
	}
	for _, d := range dirList {
		if err := tw.WriteHeader(header(seedPrefix+strings.TrimPrefix(d, "/")+"/", 0o755, tar.TypeDir, 0)); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", d, err)
		}
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, fmt.Errorf("seed file %q is not a clean absolute path", f.Path)
		}
		if err := tw.WriteHeader(header(seedPrefix+strings.TrimPrefix(f.Path, "/"), f.Mode, tar.TypeReg, int64(len(f.Content)))); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if pad := buf.Len() % seedAlignment; pad != 0 {
		buf.Write(make([]byte, seedAlignment-pad))
	}
	return buf.Bytes(), nil
}
