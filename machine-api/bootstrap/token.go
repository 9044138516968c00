package bootstrap

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

const (
	// TokenGroup is the group a Machine's bootstrap token authenticates as, besides
	// system:bootstrappers. ClusterRoleBindings grant it what a kubelet needs to join.
	TokenGroup = "system:bootstrappers:machineapi"
	// MachineUIDLabel on a bootstrap token Secret holds the UID of the Machine it was minted for.
	MachineUIDLabel = v1beta1.Prefix + "machine-uid"
	// TokenNamespace is where bootstrap tokens live.
	TokenNamespace = metav1.NamespaceSystem
	// DefaultTokenTTL is how long a token stays valid when TokenOptions.TTL is zero: long enough
	// for an instance that boots slowly (an emulated VM on a busy host), short enough that a token
	// leaked from a seed does not last. The kubelet uses it once, for its first certificate.
	DefaultTokenTTL = 24 * time.Hour

	// SecretTypeBootstrapToken is the type of a bootstrap token Secret.
	SecretTypeBootstrapToken corev1.SecretType = "bootstrap.kubernetes.io/token"
	secretPrefix                               = "bootstrap-token-"
	idLength, secretLength                     = 6, 16
)

// Token is a bootstrap token: "<id>.<secret>" authenticates as system:bootstrap:<id>.
type Token struct {
	ID         string
	Secret     string
	Expiration time.Time
}

// String is the token as a kubelet presents it.
func (t Token) String() string { return t.ID + "." + t.Secret }

// SecretName is the name of the token's Secret in kube-system.
func (t Token) SecretName() string { return secretPrefix + t.ID }

// TokenOptions tune EnsureToken.
type TokenOptions struct {
	// TTL is how long a new token is valid. Zero means DefaultTokenTTL.
	TTL time.Duration
	// Clock is the time source. Nil means the real clock.
	Clock clock.PassiveClock
}

// EnsureToken returns the Machine's bootstrap token: the one an earlier call minted when it is
// still valid for at least half of TTL, else a new one (older tokens of the Machine are deleted).
func EnsureToken(ctx context.Context, c client.Client, m *v1beta1.Machine, o TokenOptions) (Token, error) {
	if m.UID == "" {
		return Token{}, fmt.Errorf("minting a bootstrap token for machine %s/%s: the Machine has no UID", m.Namespace, m.Name)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTokenTTL
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	now := o.Clock.Now()
	secrets, err := list(ctx, c, m.UID)
	if err != nil {
		return Token{}, err
	}
	var found *Token
	for i := range secrets {
		t, ok := parse(&secrets[i])
		if ok && found == nil && t.Expiration.Sub(now) >= o.TTL/2 {
			found = &t
			continue
		}
		if err := c.Delete(ctx, &secrets[i]); err != nil && !apierrors.IsNotFound(err) {
			return Token{}, fmt.Errorf("deleting stale bootstrap token %s of machine %s/%s: %w", secrets[i].Name, m.Namespace, m.Name, err)
		}
	}
	if found != nil {
		return *found, nil
	}
	for range 3 { // a new id that collides with another token's is drawn again
		t := Token{ID: random(idLength), Secret: random(secretLength), Expiration: now.Add(o.TTL).UTC().Truncate(time.Second)}
		err := c.Create(ctx, secret(t, m))
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return Token{}, fmt.Errorf("creating bootstrap token for machine %s/%s: %w", m.Namespace, m.Name, err)
		}
		return t, nil
	}
	return Token{}, fmt.Errorf("creating bootstrap token for machine %s/%s: three token ids in a row were taken", m.Namespace, m.Name)
}

// FindToken returns the Machine's newest bootstrap token, valid or not, and whether there is one.
func FindToken(ctx context.Context, c client.Reader, uid types.UID) (Token, bool, error) {
	secrets, err := list(ctx, c, uid)
	if err != nil {
		return Token{}, false, err
	}
	var newest Token
	found := false
	for i := range secrets {
		if t, ok := parse(&secrets[i]); ok && (!found || t.Expiration.After(newest.Expiration)) {
			newest, found = t, true
		}
	}
	return newest, found, nil
}

// RevokeTokens deletes every bootstrap token minted for the Machine with this UID. Revoking a
// Machine's tokens when it has none succeeds.
func RevokeTokens(ctx context.Context, c client.Client, uid types.UID) error {
	secrets, err := list(ctx, c, uid)
	if err != nil {
		return err
	}
	var errs []error
	for i := range secrets {
		if err := c.Delete(ctx, &secrets[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("revoking bootstrap token %s: %w", secrets[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

func list(ctx context.Context, c client.Reader, uid types.UID) ([]corev1.Secret, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(TokenNamespace), client.MatchingLabels{MachineUIDLabel: string(uid)}); err != nil {
		return nil, fmt.Errorf("listing the bootstrap tokens of machine UID %s: %w", uid, err)
	}
	out := secrets.Items[:0]
	for _, s := range secrets.Items {
		if s.Type == SecretTypeBootstrapToken {
			out = append(out, s)
		}
	}
	return out, nil
}

// secret is the Secret that makes t a bootstrap token for authentication only.
func secret(t Token, m *v1beta1.Machine) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: TokenNamespace,
			Name:      t.SecretName(),
			Labels:    map[string]string{MachineUIDLabel: string(m.UID)},
		},
		Type: SecretTypeBootstrapToken,
		Data: map[string][]byte{
			"description":                    []byte(fmt.Sprintf("bootstrap token of machine %s/%s", m.Namespace, m.Name)),
			"token-id":                       []byte(t.ID),
			"token-secret":                   []byte(t.Secret),
			"expiration":                     []byte(t.Expiration.Format(time.RFC3339)),
			"usage-bootstrap-authentication": []byte("true"),
			"auth-extra-groups":              []byte(TokenGroup),
		},
	}
}

// parse reads a token from its Secret; ok is false when the Secret is not a well-formed token.
func parse(s *corev1.Secret) (Token, bool) {
	t := Token{ID: string(s.Data["token-id"]), Secret: string(s.Data["token-secret"])}
	exp, err := time.Parse(time.RFC3339, string(s.Data["expiration"]))
	if err != nil || len(t.ID) != idLength || len(t.Secret) != secretLength || s.Name != t.SecretName() {
		return Token{}, false
	}
	t.Expiration = exp
	return t, true
}

// random returns n characters of [a-z2-7] (base32, lowercase): a valid bootstrap token id or
// secret, 5 random bits a character.
func random(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(strings.ToLower(rand.Text()))
	}
	return b.String()[:n]
}
