package bootstrap

import (
	"context"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1beta1 "machineapi.dev/machine-api/api/v1beta1"
)

var now = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func machine(uid string) *v1beta1.Machine {
	return &v1beta1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "m-" + uid, UID: types.UID(uid)}}
}

func tokenSecret(id, uid string, expires time.Time) *corev1.Secret {
	return secret(Token{ID: id, Secret: "0123456789abcdef", Expiration: expires}, machine(uid))
}

// TestEnsureToken protects the rules of reuse: a repeated Create must find the token an earlier
// one minted (its seed holds it), and must not hand out one about to expire.
func TestEnsureToken(t *testing.T) {
	tests := map[string]struct {
		existing  []client.Object
		wantReuse string   // id of the token that must come back; empty: a new one
		wantGone  []string // ids whose Secrets must be deleted
		wantKept  []string // ids whose Secrets must stay
	}{
		"no token: a new one": {},
		"a valid token is reused": {
			existing:  []client.Object{tokenSecret("abcdef", "u1", now.Add(20*time.Hour))},
			wantReuse: "abcdef",
		},
		"an expired token is replaced and deleted": {
			existing: []client.Object{tokenSecret("abcdef", "u1", now.Add(-time.Minute))},
			wantGone: []string{"abcdef"},
		},
		"a token with less than half its lifetime left is replaced": {
			existing: []client.Object{tokenSecret("abcdef", "u1", now.Add(11*time.Hour))},
			wantGone: []string{"abcdef"},
		},
		"another Machine's token is left alone": {
			existing: []client.Object{tokenSecret("zzzzzz", "u2", now.Add(20*time.Hour))},
			wantKept: []string{"zzzzzz"},
		},
		"a second valid token of the Machine is deleted": {
			existing:  []client.Object{tokenSecret("aaaaaa", "u1", now.Add(20*time.Hour)), tokenSecret("bbbbbb", "u1", now.Add(20*time.Hour))},
			wantReuse: "aaaaaa",
			wantGone:  []string{"bbbbbb"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithObjects(tc.existing...).Build()
			got, err := EnsureToken(ctx, c, machine("u1"), TokenOptions{Clock: clocktesting.NewFakePassiveClock(now)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantReuse != "" && got.ID != tc.wantReuse {
				t.Errorf("got token %s, want the existing %s", got.ID, tc.wantReuse)
			}
			if tc.wantReuse == "" {
				if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(got.String()) {
					t.Errorf("token %q is not a bootstrap token", got.String())
				}
				if want := now.Add(DefaultTokenTTL); !got.Expiration.Equal(want) {
					t.Errorf("expiration %s, want %s", got.Expiration, want)
				}
			}
			s := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: got.SecretName()}, s); err != nil {
				t.Fatalf("the token's Secret: %v", err)
			}
			if back, ok := parse(s); !ok || back != got {
				t.Errorf("the Secret reads back as %+v (ok %v), want %+v", back, ok, got)
			}
			if s.Type != SecretTypeBootstrapToken || s.Labels[MachineUIDLabel] != "u1" ||
				string(s.Data["usage-bootstrap-authentication"]) != "true" || string(s.Data["auth-extra-groups"]) != TokenGroup {
				t.Errorf("the Secret is not an authentication token of the machineapi group for u1: %+v", s)
			}
			if _, ok := s.Data["usage-bootstrap-signing"]; ok {
				t.Errorf("the token may sign the cluster-info ConfigMap; it must only authenticate")
			}
			for _, id := range tc.wantGone {
				if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: secretPrefix + id}, &corev1.Secret{}); err == nil {
					t.Errorf("token %s still exists", id)
				}
			}
			for _, id := range tc.wantKept {
				if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: secretPrefix + id}, &corev1.Secret{}); err != nil {
					t.Errorf("token %s: %v", id, err)
				}
			}
		})
	}
}

func TestRevokeTokensDeletesOnlyTheMachines(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithObjects(
		tokenSecret("aaaaaa", "u1", now), tokenSecret("bbbbbb", "u1", now), tokenSecret("cccccc", "u2", now),
	).Build()
	if err := RevokeTokens(ctx, c, "u1"); err != nil {
		t.Fatal(err)
	}
	if err := RevokeTokens(ctx, c, "u1"); err != nil {
		t.Fatalf("revoking again: %v", err)
	}
	left := &corev1.SecretList{}
	if err := c.List(ctx, left); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != "bootstrap-token-cccccc" {
		t.Errorf("left %v, want only u2's token", left.Items)
	}
	if _, found, err := FindToken(ctx, c, "u2"); err != nil || !found {
		t.Errorf("FindToken(u2) = %v, %v; want found", found, err)
	}
	if _, found, err := FindToken(ctx, c, "u1"); err != nil || found {
		t.Errorf("FindToken(u1) = %v, %v; want none", found, err)
	}
}

func TestEnsureTokenNeedsAUID(t *testing.T) {
	if _, err := EnsureToken(context.Background(), fake.NewClientBuilder().Build(), machine(""), TokenOptions{}); err == nil {
		t.Fatal("a token was minted for a Machine without UID")
	}
}

func TestRandomIsATokenAlphabet(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := random(secretLength)
		if !regexp.MustCompile(`^[a-z0-9]{16}$`).MatchString(s) {
			t.Fatalf("%q is not 16 characters of [a-z0-9]", s)
		}
		if seen[s] {
			t.Fatalf("%q drawn twice", s)
		}
		seen[s] = true
	}
}
