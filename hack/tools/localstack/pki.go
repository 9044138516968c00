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
func (p pki) servingCert() string       { return p.path("apiserver.crt") }
func (p pki) servingKey() string        { return p.path("apiserver.key") }
func (p pki) adminCert() string         { return p.path("admin.crt") }
func (p pki) adminKey() string          { return p.path("admin.key") }
func (p pki) serviceAccountKey() string { return p.path("sa.key") }
func (p pki) serviceAccountPub() string { return p.path("sa.pub") }

// ensure creates whatever files are missing. A CA, a serving certificate for 127.0.0.1 and
// localhost, an admin client certificate in system:masters, and the service-account key pair.
func (p pki) ensure() error {
	if _, err := os.Stat(p.adminKey()); err == nil {
		return nil
	}
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
	// The admin key is written last: its presence marks a complete set.
	return issue(3, "machineapi-admin", []string{"system:masters"}, x509.ExtKeyUsageClientAuth, p.adminCert(), p.adminKey())
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// kubeconfig renders a kubeconfig for the admin user with the certificates embedded, so the file
// can be copied anywhere.
func (p pki) kubeconfig(server string) ([]byte, error) {
	read := func(path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		return b, nil
	}
	ca, err1 := read(p.caCert())
	cert, err2 := read(p.adminCert())
	key, err3 := read(p.adminKey())
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
- name: machineapi-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: machineapi-local
  context:
    cluster: machineapi-local
    user: machineapi-admin
current-context: machineapi-local
`, server, enc(ca), enc(cert), enc(key)), nil
}
