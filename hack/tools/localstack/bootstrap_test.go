package localstack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestNodeBootstrap: a plane started with NodeBootstrap, and the RBAC of ApplyNodeBootstrap,
// lets a kubelet join as clusters do it — a bootstrap token authenticates it, its CSR for a node
// client certificate is approved and signed by kube-controller-manager — and NodeRestriction then
// holds that Node to what a kubelet may do: no node-role label of its own. An expired token is
// deleted by the token cleaner, which runs only with the option.
func TestNodeBootstrap(t *testing.T) {
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test` (it builds the control plane first)")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plane, err := Start(ctx, Config{BinDir: bin, StateDir: t.TempDir(), APIServerPort: freePort(t), EtcdPort: freePortPair(t),
		EtcdUnsafeNoFsync: true, NodeBootstrap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop)
	admin, err := clientcmd.BuildConfigFromFlags("", plane.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := NewApplier(admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyNodeBootstrap(ctx, applier, root); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(admin)

	// The token, as machineapi.dev/machine-api/bootstrap mints it.
	createToken := func(id string, expires time.Time) {
		t.Helper()
		_, err := cs.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id},
			Type:       corev1.SecretTypeBootstrapToken,
			StringData: map[string]string{
				"token-id": id, "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
				"auth-extra-groups": "system:bootstrappers:machineapi", "expiration": expires.UTC().Format(time.RFC3339),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	createToken("abcdef", time.Now().Add(time.Hour))
	kubelet := rest.AnonymousClientConfig(admin)
	kubelet.BearerToken = "abcdef.0123456789abcdef"
	asBootstrap := kubernetes.NewForConfigOrDie(kubelet)

	const node = "vm-1"
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := asBootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the bootstrap token may not create a CSR: %v", err)
	}
	var cert []byte
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		t.Fatalf("the kubelet's CSR was not approved and signed within a minute: %v", err)
	}

	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	asNode := rest.AnonymousClientConfig(admin)
	asNode.CertData, asNode.KeyData = cert, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	nodeClient := kubernetes.NewForConfigOrDie(asNode)
	withRole := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, withRole, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("a kubelet registered its Node with a node-role label (error %v): NodeRestriction is not on", err)
	}
	if _, err := nodeClient.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the kubelet's signed certificate cannot register its Node: %v", err)
	}

	createToken("expird", time.Now().Add(-time.Minute))
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-expird", metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("an expired bootstrap token was not deleted within a minute (is the token cleaner running?): %v", err)
	}
}

// ignoreNotFound passes on an error other than NotFound.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
