package kubeconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/cluster-api/api/v1beta1"
)

// DefaultKey is the Secret key read when spec.kubeconfigSecretRef.key is empty.
const DefaultKey = "value"

// ProblemKind says what is wrong with a kubeconfig Secret.
type ProblemKind int

const (
	// SecretNotFound: the Secret named by spec.kubeconfigSecretRef does not exist.
	SecretNotFound ProblemKind = iota + 1
	// Invalid: the Secret lacks the key, or its value is not a usable kubeconfig.
	Invalid
)

// Problem is something only the user can fix; Message says what.
type Problem struct {
	Kind    ProblemKind
	Message string
}

// Config is a workload cluster's client configuration.
type Config struct {
	// Rest reaches the workload API server.
	Rest *rest.Config
	// Fingerprint identifies the kubeconfig's content: it changes when the kubeconfig does.
	Fingerprint string
}

// Read reads the kubeconfig of cluster c (which must have spec.kubeconfigSecretRef) through
// reader, with get only. The returned configuration has the given QPS and burst and a user agent
// naming userAgent and the Cluster. Exactly one of cfg, problem and err is set.
func Read(ctx context.Context, reader client.Reader, c *v1beta1.Cluster, userAgent string, qps float32, burst int) (cfg *Config, problem *Problem, err error) {
	ref := c.Spec.KubeconfigSecretRef
	if ref == nil {
		return nil, &Problem{Kind: SecretNotFound, Message: fmt.Sprintf("cluster %s/%s has no spec.kubeconfigSecretRef", c.Namespace, c.Name)}, nil
	}
	key := ref.Key
	if key == "" {
		key = DefaultKey
	}
	secret := &corev1.Secret{}
	err = reader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}, secret)
	if apierrors.IsNotFound(err) {
		return nil, &Problem{Kind: SecretNotFound, Message: fmt.Sprintf("Secret %s/%s named by spec.kubeconfigSecretRef does not exist; create it with the workload cluster's kubeconfig under key %q", c.Namespace, ref.Name, key)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading kubeconfig Secret %s/%s: %w", c.Namespace, ref.Name, err)
	}
	data, ok := secret.Data[key]
	if !ok || len(data) == 0 {
		return nil, &Problem{Kind: Invalid, Message: fmt.Sprintf("Secret %s/%s has no key %q (spec.kubeconfigSecretRef.key)", c.Namespace, ref.Name, key)}, nil
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, &Problem{Kind: Invalid, Message: fmt.Sprintf("Secret %s/%s key %q is not a usable kubeconfig: %v", c.Namespace, ref.Name, key, err)}, nil
	}
	rc.QPS, rc.Burst = qps, burst
	rc.UserAgent = userAgent + "/" + c.Namespace + "/" + c.Name
	sum := sha256.Sum256(data)
	return &Config{Rest: rc, Fingerprint: hex.EncodeToString(sum[:8])}, nil, nil
}
