//go:build libvirt

package libvirtprovider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	libvirt "github.com/digitalocean/go-libvirt"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"machineapi.dev/machine-api/bootstrap"

	"machineapi.dev/machine-api/provider"
)

// joinTimeout bounds boot to Node Ready: ~1.5-2.5 min under TCG on an idle 2-core host, more
// when the host is busy.
const joinTimeout = 10 * time.Minute

// TestNodeJoins boots the real node image (MACHINEAPI_NODE_IMAGE_VOLUME: a volume of the pool,
// see hack/import-node-image.sh) as a Machine, on the loopback user network, against a control
// plane that joins nodes as clusters do: kube-apiserver with bootstrap-token authentication and the
// Node authorizer, kube-controller-manager approving and signing the kubelet's CSR. The Node must
// register with the Machine's providerID, its InternalIP and the initialization taint, and become Ready.
func TestNodeJoins(t *testing.T) {
	image := os.Getenv("MACHINEAPI_NODE_IMAGE_VOLUME")
	if image == "" {
		t.Skip("MACHINEAPI_NODE_IMAGE_VOLUME is not set: import the node image with providers/libvirt/hack/import-node-image.sh and set it to the volume's name")
	}
	ctx := context.Background()
	logf.SetLogger(testr.New(t))
	cfg, k8s := joiningControlPlane(t)
	for _, b := range bootstrap.ClusterRoleBindings() {
		if err := k8s.Create(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := libvirt.ConnectToURI(&url.URL{Scheme: "qemu", Path: "/system"})
	if err != nil {
		t.Fatalf("cannot reach libvirtd (%v): run providers/libvirt/hack/host-setup.sh as root", err)
	}
	t.Cleanup(func() { _ = conn.Disconnect() })
	f := &fixture{conn: conn, pool: envOr("MACHINEAPI_LIBVIRT_POOL", "default"), image: image, k8s: k8s, managerID: "test-join-" + randomHex(4), uids: map[types.UID]bool{}}
	opts := DefaultOptions()
	opts.ManagerID = f.managerID
	if f.p, err = New(opts).WithCluster(k8s, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.expectNoLeftovers(t) })

	m := f.machineWith("joiner", func(s map[string]any) { s["memory"] = "1Gi" })
	f.cleanup(t, m)
	start := time.Now()
	if err := f.p.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	t.Logf("Create took %s; providerID %s, addresses %v", time.Since(start).Round(time.Millisecond), m.Spec.ProviderID, m.Status.Addresses)

	var registered time.Duration
	node := &corev1.Node{}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, joinTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: provider.NodeName(m)}, node); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if registered == 0 {
			registered = time.Since(start)
			t.Logf("Node %s registered %s after Create", node.Name, registered.Round(time.Second))
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Node %s not Ready %s after Create (registered: %v): %v; the guest's console is in /var/log/libvirt/qemu/%s-console.log",
			provider.NodeName(m), joinTimeout, registered != 0, err, domainName(m))
	}
	t.Logf("Node %s Ready %s after Create", node.Name, time.Since(start).Round(time.Second))
	if node.Spec.ProviderID != m.Spec.ProviderID {
		t.Errorf("the Node's providerID is %q, the Machine's %q", node.Spec.ProviderID, m.Spec.ProviderID)
	}
	var nodeIP string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			nodeIP = a.Address
		}
	}
	if nodeIP != m.Status.Addresses[0].Address {
		t.Errorf("the Node's InternalIP is %q, the Machine's %q", nodeIP, m.Status.Addresses[0].Address)
	}
	// No node linker runs here to lift the initialization taint, nor a node lifecycle controller
	// to lift the kubelet's own condition taint: the Node keeps what it registered with.
	initialized := false
	for _, taint := range node.Spec.Taints {
		switch {
		case taint.Key == opts.InitializationTaintKey && taint.Effect == corev1.TaintEffectNoSchedule:
			initialized = true
		case taint.Key != corev1.TaintNodeNotReady:
			t.Errorf("the Node registered with taint %v; it was not asked for", taint)
		}
	}
	if !initialized {
		t.Errorf("the Node registered without the initialization taint %s:NoSchedule: %v", opts.InitializationTaintKey, node.Spec.Taints)
	}
}

// joiningControlPlane starts kube-apiserver with bootstrap-token authentication and the Node
// authorizer, and kube-controller-manager approving and signing kubelet client certificates with a
// CA the API server trusts.
func joiningControlPlane(t *testing.T) (*rest.Config, client.Client) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make controlplane` and export KUBEBUILDER_ASSETS=<repository>/bin/k8s/1.37.2")
	}
	dir := t.TempDir()
	caCert, caKey := writeCA(t, dir)
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 90 * time.Second, ControlPlaneStopTimeout: 30 * time.Second}
	api := env.ControlPlane.GetAPIServer()
	api.Configure().Set("enable-bootstrap-token-auth", "true")
	api.Configure().Set("authorization-mode", "Node,RBAC")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	// The API server reloads its client CA file when it changes: it then trusts what
	// kube-controller-manager signs.
	clientCA := api.Configure().Get("client-ca-file").Get(nil)[0]
	own, err := os.ReadFile(clientCA)
	if err != nil {
		t.Fatal(err)
	}
	signing, _ := os.ReadFile(caCert)
	if err := os.WriteFile(clientCA, append(own, signing...), 0o600); err != nil {
		t.Fatal(err)
	}
	admin, err := env.AddUser(envtest.User{Name: "kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigFile := filepath.Join(dir, "kcm.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	kcm := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfigFile, "--controllers=csrapproving,csrsigning", "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--cluster-signing-cert-file="+caCert, "--cluster-signing-key-file="+caKey)
	kcm.Stdout, kcm.Stderr = logFile, logFile
	if err := kcm.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kcm.Process.Kill()
		_ = kcm.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(logFile.Name())
			t.Logf("kube-controller-manager's log:\n%s", data)
		}
	})
	k8s, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, k8s
}

// writeCA writes a self-signed CA for kube-controller-manager's csrsigning controller.
func writeCA(t *testing.T, dir string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster signing CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
