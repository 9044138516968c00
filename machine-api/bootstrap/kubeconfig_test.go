package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestKubeconfigRoundTrip(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	data, err := Kubeconfig(KubeconfigOptions{Server: "https://10.0.3.254:6443", CAData: []byte("CA PEM"), TLSServerName: "127.0.0.1", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("the kubeconfig does not load: %v\n%s", err, data)
	}
	if cfg.Host != "https://10.0.3.254:6443" || string(cfg.CAData) != "CA PEM" || cfg.ServerName != "127.0.0.1" || cfg.BearerToken != "abcdef.0123456789abcdef" {
		t.Errorf("loaded %+v", cfg)
	}
}

func TestKubeconfigRefusesIncompleteInput(t *testing.T) {
	tok := Token{ID: "abcdef", Secret: "0123456789abcdef"}
	tests := map[string]KubeconfigOptions{
		"plain http":   {Server: "http://10.0.3.254:6443", CAData: []byte("x"), Token: tok},
		"not a URL":    {Server: "10.0.3.254:6443", CAData: []byte("x"), Token: tok},
		"no CA":        {Server: "https://10.0.3.254:6443", Token: tok},
		"no token":     {Server: "https://10.0.3.254:6443", CAData: []byte("x")},
		"half a token": {Server: "https://10.0.3.254:6443", CAData: []byte("x"), Token: Token{ID: "abcdef"}},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Kubeconfig(o); err == nil {
				t.Error("rendered")
			}
		})
	}
}

func TestCAData(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte("from file"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		cfg     rest.Config
		want    string
		wantErr string
	}{
		"inline":  {cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("inline"), CAFile: file}}, want: "inline"},
		"file":    {cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: file}}, want: "from file"},
		"missing": {cfg: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: file + ".gone"}}, wantErr: "reading the cluster CA"},
		"none":    {cfg: rest.Config{}, wantErr: "give the cluster CA explicitly"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := CAData(&tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("CAData = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
