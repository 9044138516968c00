package bootstrap

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigOptions describe the bootstrap kubeconfig of one machine.
type KubeconfigOptions struct {
	// Server is the API server's URL as the machine reaches it (https://10.0.3.254:6443).
	Server string
	// CAData is the PEM bundle the machine verifies the API server's certificate with.
	CAData []byte
	// TLSServerName, when set, is the name the server's certificate is checked against instead of
	// the host of Server (when the machine reaches the API server through a forwarded address).
	TLSServerName string
	// Token is the machine's bootstrap token.
	Token Token
}

// Kubeconfig renders the kubeconfig a kubelet starts with (--bootstrap-kubeconfig): it
// authenticates with the bootstrap token until the kubelet holds its own client certificate.
func Kubeconfig(o KubeconfigOptions) ([]byte, error) {
	u, err := url.Parse(o.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("the API server URL %q is not an https:// URL", o.Server)
	}
	if len(o.CAData) == 0 {
		return nil, errors.New("a bootstrap kubeconfig needs the cluster CA")
	}
	if o.Token.ID == "" || o.Token.Secret == "" {
		return nil, errors.New("a bootstrap kubeconfig needs a token")
	}
	const name = "default"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: o.Server, CertificateAuthorityData: o.CAData, TLSServerName: o.TLSServerName}
	cfg.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: o.Token.String()}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "kubelet-bootstrap"}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}

// CAData returns the certificate authority cfg trusts (its CAData, else the file CAFile names):
// by default, the CA a machine should trust for the API server that client configuration reaches.
func CAData(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster CA: %w", err)
		}
		return data, nil
	}
	return nil, errors.New("the client configuration names no certificate authority (it trusts the system roots or none): give the cluster CA explicitly")
}
