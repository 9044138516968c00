package bootstrap_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"machineapi.dev/drain/testplane"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The suite runs the flow a kubelet goes through against the source-built kube-apiserver (with
// --enable-bootstrap-token-auth) and kube-controller-manager's csrapproving and csrsigning
// controllers, signing with a CA the API server trusts for client certificates.
var (
	env        *testplane.Environment
	components *testplane.Components
	cfg        *rest.Config
	k8s        client.Client
	ctx        = context.Background()
)

func TestBootstrap(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bootstrap tokens and kubelet client certificates on a real control plane")
}

var _ = BeforeSuite(func() {
	dir := GinkgoT().TempDir()
	caCert, caKey := writeSigningCA(dir)
	e := &envtest.Environment{}
	api := e.ControlPlane.GetAPIServer()
	api.Configure().Set("enable-bootstrap-token-auth", "true")
	// Nodes create their renewal CSRs under the Node authorizer, as in a cluster.
	api.Configure().Set("authorization-mode", "Node,RBAC")
	var err error
	env, err = testplane.StartEnvironment(e, testplane.EnvironmentOptions{})
	Expect(err).NotTo(HaveOccurred())
	trustAlso(api, caCert)
	cfg = env.Config
	k8s, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())

	admin, err := env.AddUser(envtest.User{Name: "kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	components, err = testplane.Start(ctx, testplane.Options{
		BinDir:      env.BinaryAssetsDirectory,
		Kubeconfig:  kubeconfig,
		Dir:         filepath.Join(dir, "kcm"),
		Controllers: []string{"csrapproving", "csrsigning"},
		ExtraControllerManagerArgs: []string{
			"--cluster-signing-cert-file=" + caCert,
			"--cluster-signing-key-file=" + caKey,
		},
	})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if components != nil {
		components.Stop()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// trustAlso appends the CA in file to the API server's --client-ca-file, as a cluster's client CA
// trusts what kube-controller-manager signs. The API server reloads that file when it changes.
func trustAlso(api *envtest.APIServer, file string) {
	caFile := api.Configure().Get("client-ca-file").Get(nil)
	Expect(caFile).To(HaveLen(1))
	own, err := os.ReadFile(caFile[0])
	Expect(err).NotTo(HaveOccurred())
	extra, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(caFile[0], append(own, extra...), 0o600)).To(Succeed())
}

// writeSigningCA writes a self-signed CA for kube-controller-manager's csrsigning controller.
func writeSigningCA(dir string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cluster signing CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	certFile, keyFile = filepath.Join(dir, "signing-ca.crt"), filepath.Join(dir, "signing-ca.key")
	Expect(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)).To(Succeed())
	return certFile, keyFile
}
