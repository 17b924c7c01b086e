package steptoken

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	other := []byte("fedcba9876543210fedcba9876543210")
	keys := KeySet{Current: testKey}
	rotating := KeySet{Current: other, Previous: testKey}
	tok := Issue(testKey, "shop", now.Add(-time.Hour))
	tests := []struct {
		name       string
		keys       KeySet
		project    string
		token      string
		revoked    Revocation
		want       Verdict
		wantIssued time.Time
	}{
		{name: "own project", keys: keys, project: "shop", token: tok, want: Valid, wantIssued: now.Add(-time.Hour)},
		{name: "another project's token", keys: keys, project: "shop", token: Issue(testKey, "shop2", now)},
		{name: "prefix project's token", keys: keys, project: "shop", token: Issue(testKey, "sho", now)},
		{name: "token of another key", keys: keys, project: "shop", token: Issue(other, "shop", now)},
		{name: "previous key during a rotation", keys: rotating, project: "shop", token: tok, want: Valid,
			wantIssued: now.Add(-time.Hour)},
		{name: "current key during a rotation", keys: rotating, project: "shop", token: Issue(other, "shop", now),
			want: Valid, wantIssued: now},
		{name: "issue time changed", keys: keys, project: "shop", token: strings.Replace(tok, ".177", ".178", 1)},
		{name: "issue time with a leading zero", keys: keys, project: "shop", token: strings.Replace(tok, "v2.", "v2.0", 1)},
		{name: "version 1 token", keys: keys, project: "shop", token: "Yk8aFvTqYr1mYw0rGsSMxMOPkTPM1ZpYzBhWm0i1rQ4"},
		{name: "empty", keys: keys, project: "shop", token: ""},
		{name: "truncated", keys: keys, project: "shop", token: tok[:20]},
		{name: "expired", keys: keys, project: "shop", token: Issue(testKey, "shop", now.Add(-TTL-time.Second)),
			want: Expired, wantIssued: now.Add(-TTL - time.Second)},
		{name: "last second of its life", keys: keys, project: "shop", token: Issue(testKey, "shop", now.Add(-TTL)),
			want: Valid, wantIssued: now.Add(-TTL)},
		{name: "issued in the future", keys: keys, project: "shop", token: Issue(testKey, "shop", now.Add(time.Hour)),
			want: Expired, wantIssued: now.Add(time.Hour)},
		{name: "revoked", keys: keys, project: "shop", token: tok, revoked: Revocation{All: true},
			want: Revoked, wantIssued: now.Add(-time.Hour)},
		{name: "issued before the revocation time", keys: keys, project: "shop", token: tok,
			revoked: Revocation{Before: now}, want: Revoked, wantIssued: now.Add(-time.Hour)},
		{name: "issued after the revocation time", keys: keys, project: "shop", token: tok,
			revoked: Revocation{Before: now.Add(-2 * time.Hour)}, want: Valid, wantIssued: now.Add(-time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, issued := Check(tt.keys, tt.project, tt.token, now, tt.revoked)
			require.Equal(t, tt.want, got)
			require.True(t, tt.wantIssued.Equal(issued), "issued %s, want %s", issued, tt.wantIssued)
		})
	}
	require.Equal(t, Issue(testKey, "shop", now), Issue(testKey, "shop", now), "deterministic")
	require.Len(t, Issue(testKey, "shop", now), len("v2.1777636800.")+43, "256 bits, unpadded base64url")
}

func TestRevocationOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		annotations map[string]string
		want        Revocation
	}{
		{name: "none", want: Revocation{}},
		{name: "other annotations", annotations: map[string]string{"a": "true"}, want: Revocation{}},
		{name: "true", annotations: map[string]string{fleetv1alpha1.StepTokenRevokedAnnotation: "true"},
			want: Revocation{All: true}},
		{name: "empty value", annotations: map[string]string{fleetv1alpha1.StepTokenRevokedAnnotation: ""},
			want: Revocation{All: true}},
		{name: "a time", annotations: map[string]string{fleetv1alpha1.StepTokenRevokedAnnotation: "2026-05-01T12:00:00Z"},
			want: Revocation{Before: at}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RevocationOf(tt.annotations)
			require.Equal(t, tt.want.All, got.All)
			require.True(t, tt.want.Before.Equal(got.Before))
		})
	}
}

func TestStaticKey(t *testing.T) {
	t.Parallel()
	_, err := StaticKey("short").SigningKeys(context.Background())
	require.ErrorContains(t, err, "at least 32")
	k, err := testKey.SigningKeys(context.Background())
	require.NoError(t, err)
	require.Equal(t, KeySet{Current: testKey}, k)
}

func TestSecretKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: "kargo-fleet", Name: DefaultSigningKeySecret}
	other := []byte("fedcba9876543210fedcba9876543210")

	t.Run("creates a random key once and every replica reads it", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t)
		first, err := NewSecretKey("", ref, c, c).SigningKeys(ctx)
		require.NoError(t, err)
		require.Len(t, first.Current, MinSigningKeyBytes)
		second, err := NewSecretKey("", ref, c, c).SigningKeys(ctx)
		require.NoError(t, err)
		require.Equal(t, first, second)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, ref, &s))
		require.Equal(t, ManagedByValue, s.Labels[ManagedByLabel])
	})

	t.Run("reads a rotated key at once", func(t *testing.T) {
		t.Parallel()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
			Data:       map[string][]byte{SigningKeySecretKey: testKey},
		}
		c := newFakeClient(t, s)
		keys := NewSecretKey("", ref, c, c)
		k, err := keys.SigningKeys(ctx)
		require.NoError(t, err)
		require.Equal(t, KeySet{Current: testKey}, k)

		s.Data = map[string][]byte{SigningKeySecretKey: other, PreviousSigningKeySecretKey: testKey}
		require.NoError(t, c.Update(ctx, s))
		k, err = keys.SigningKeys(ctx)
		require.NoError(t, err)
		require.Equal(t, KeySet{Current: other, Previous: testKey}, k, "the same source, no restart")
	})

	for name, data := range map[string]map[string][]byte{
		"refuses a short key":          {SigningKeySecretKey: []byte("short")},
		"refuses a short previous key": {SigningKeySecretKey: testKey, PreviousSigningKeySecretKey: []byte("short")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}, Data: data})
			_, err := NewSecretKey("", ref, c, c).SigningKeys(ctx)
			require.ErrorContains(t, err, "at least 32")
		})
	}

	t.Run("a file wins", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "key")
		require.NoError(t, os.WriteFile(file, append([]byte(testKey), '\n'), 0o600))
		c := newFakeClient(t)
		keys := NewSecretKey(file, ref, c, c)
		k, err := keys.SigningKeys(ctx)
		require.NoError(t, err)
		require.Equal(t, KeySet{Current: testKey}, k)
		var s corev1.Secret
		require.Error(t, c.Get(ctx, ref, &s), "no Secret is created when a file is configured")

		require.NoError(t, os.WriteFile(file, []byte(string(other)+"\n"+string(testKey)+"\n"), 0o600))
		k, err = keys.SigningKeys(ctx)
		require.NoError(t, err)
		require.Equal(t, KeySet{Current: other, Previous: testKey}, k, "a second line is the previous key")
	})
}
