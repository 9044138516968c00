package localstack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the set of files the API server and its clients need. They are made once and reused,
// so that a kubeconfig handed out by an earlier run keeps working.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p pki) caCert() string            { return p.path("ca.crt") }
func (p pki) caKey() string             { return p.path("ca.key") }
func (p pki) servingCert() string       { return p.path("apiserver.crt") }
func (p pki) servingKey() string        { return p.path("apiserver.key") }
func (p pki) adminCert() string         { return p.path("admin.crt") }
func (p pki) adminKey() string          { return p.path("admin.key") }
func (p pki) serviceAccountKey() string { return p.path("sa.key") }
func (p pki) serviceAccountPub() string { return p.path("sa.pub") }

// clientCert and clientKey are the certificate files of a component's client identity
// (kube-controller-manager, kube-scheduler).
func (p pki) clientCert(component string) string { return p.path(component + ".crt") }
func (p pki) clientKey(component string) string  { return p.path(component + ".key") }

// components are the control plane's clients besides the admin, with the user names the API
// server's bootstrap RBAC policy grants their permissions to.
var components = map[string]string{
	"kube-controller-manager": "system:kube-controller-manager",
	"kube-scheduler":          "system:kube-scheduler",
}

// ensure creates the files when any is missing: a CA (its key kept, for the controller manager's
// CSR signer), a serving certificate for 127.0.0.1 and localhost, an admin client certificate in
// system:masters, a client certificate per component, and the service-account key pair. A set made
// by an older version (without the CA key or the component certificates) is made again, so a
// kubeconfig handed out before that stops working.
func (p pki) ensure() (remade bool, err error) {
	complete := true
	for _, f := range []string{p.caKey(), p.clientKey("kube-controller-manager"), p.clientKey("kube-scheduler"), p.adminKey()} {
		if _, err := os.Stat(f); err != nil {
			complete = false
		}
	}
	if complete {
		return false, nil
	}
	_, statErr := os.Stat(p.adminKey())
	return statErr == nil, p.create()
}

func (p pki) create() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "machineapi-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(p.caCert(), "CERTIFICATE", caDER); err != nil {
		return err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.caKey(), "EC PRIVATE KEY", caKeyDER); err != nil {
		return err
	}
	issue := func(serial int64, cn string, orgs []string, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn, Organization: orgs},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.AddDate(10, 0, 0),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyFile, "EC PRIVATE KEY", keyDER)
	}
	if err := issue(2, "kube-apiserver", nil, x509.ExtKeyUsageServerAuth, p.servingCert(), p.servingKey()); err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(p.serviceAccountKey(), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return err
	}
	if err := writePEM(p.serviceAccountPub(), "PUBLIC KEY", pub); err != nil {
		return err
	}
	serial := int64(4)
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		if err := issue(serial, components[name], nil, x509.ExtKeyUsageClientAuth, p.clientCert(name), p.clientKey(name)); err != nil {
			return err
		}
		serial++
	}
	// The admin key is written last: its presence marks a complete set.
	return issue(3, "machineapi-admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, p.adminCert(), p.adminKey())
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// kubeconfig renders a kubeconfig for the admin user with the certificates embedded, so the file
// can be copied anywhere.
func (p pki) kubeconfig(server string) ([]byte, error) {
	return p.kubeconfigFor(server, "machineapi-admin", p.adminCert(), p.adminKey())
}

// kubeconfigFor renders a kubeconfig for the user of the client certificate certFile.
func (p pki) kubeconfigFor(server, user, certFile, keyFile string) ([]byte, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return b, nil
	}
	ca, err1 := read(p.caCert())
	cert, err2 := read(certFile)
	key, err3 := read(keyFile)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	enc := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: machineapi-local
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %[5]s
  user:
    client-certificate-data: %[3]s
    client-key-data: %[4]s
contexts:
- name: machineapi-local
  context:
    cluster: machineapi-local
    user: %[5]s
current-context: machineapi-local
`, server, enc(ca), enc(cert), enc(key), user), nil
}
