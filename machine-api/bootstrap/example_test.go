package bootstrap_test

import (
	"fmt"

	"machineapi.dev/machine-api/bootstrap"
)

// A machine on QEMU's user network reaches the API server through a forwarded address, so the
// kubeconfig names the server's certificate name separately.
func ExampleKubeconfig() {
	data, err := bootstrap.Kubeconfig(bootstrap.KubeconfigOptions{
		Server:        "https://10.0.7.254:6443",
		CAData:        []byte("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n"),
		TLSServerName: "127.0.0.1",
		Token:         bootstrap.Token{ID: "abcdef", Secret: "0123456789abcdef"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(data))
	// Output:
	// apiVersion: v1
	// clusters:
	// - cluster:
	//     certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCi4uLgotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==
	//     server: https://10.0.7.254:6443
	//     tls-server-name: 127.0.0.1
	//   name: default
	// contexts:
	// - context:
	//     cluster: default
	//     user: kubelet-bootstrap
	//   name: default
	// current-context: default
	// kind: Config
	// users:
	// - name: kubelet-bootstrap
	//   user:
	//     token: abcdef.0123456789abcdef
}
