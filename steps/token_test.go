package steps

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDeriveToken(t *testing.T) {
	t.Parallel()
	other := StaticKey("fedcba9876543210fedcba9876543210")
	tests := []struct {
		name      string
		key       []byte
		project   string
		token     string
		wantValid bool
	}{
		{name: "own project", key: testKey, project: "shop", token: DeriveToken(testKey, "shop"), wantValid: true},
		{name: "another project's token", key: testKey, project: "shop", token: DeriveToken(testKey, "shop2")},
		{name: "prefix project's token", key: testKey, project: "shop", token: DeriveToken(testKey, "sho")},
		{name: "token of another key", key: testKey, project: "shop", token: DeriveToken(other, "shop")},
		{name: "empty", key: testKey, project: "shop", token: ""},
		{name: "truncated", key: testKey, project: "shop", token: DeriveToken(testKey, "shop")[:20]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.wantValid, verifyToken(tt.key, tt.project, tt.token))
		})
	}
	require.Equal(t, DeriveToken(testKey, "shop"), DeriveToken(testKey, "shop"), "deterministic")
	require.Len(t, DeriveToken(testKey, "shop"), 43, "256 bits, unpadded base64url")
}

func TestStaticKey(t *testing.T) {
	t.Parallel()
	_, err := StaticKey("short").SigningKey(context.Background())
	require.ErrorContains(t, err, "at least 32")
	k, err := testKey.SigningKey(context.Background())
	require.NoError(t, err)
	require.Equal(t, []byte(testKey), k)
}

func TestSecretKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ref := types.NamespacedName{Namespace: "kargo-fleet", Name: DefaultSigningKeySecret}

	t.Run("creates a random key once and every replica reads it", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t)
		first, err := NewSecretKey("", ref, c, c).SigningKey(ctx)
		require.NoError(t, err)
		require.Len(t, first, MinSigningKeyBytes)
		second, err := NewSecretKey("", ref, c, c).SigningKey(ctx)
		require.NoError(t, err)
		require.Equal(t, first, second)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, ref, &s))
		require.Equal(t, ManagedByValue, s.Labels[ManagedByLabel])
	})

	t.Run("reads an existing Secret", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
			Data:       map[string][]byte{SigningKeySecretKey: testKey},
		})
		k, err := NewSecretKey("", ref, c, c).SigningKey(ctx)
		require.NoError(t, err)
		require.Equal(t, []byte(testKey), k)
	})

	t.Run("refuses a short key", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
			Data:       map[string][]byte{SigningKeySecretKey: []byte("short")},
		})
		_, err := NewSecretKey("", ref, c, c).SigningKey(ctx)
		require.ErrorContains(t, err, "at least 32")
	})

	t.Run("a file wins", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "key")
		require.NoError(t, os.WriteFile(file, append([]byte(testKey), '\n'), 0o600))
		c := newFakeClient(t)
		k, err := NewSecretKey(file, ref, c, c).SigningKey(ctx)
		require.NoError(t, err)
		require.Equal(t, []byte(testKey), k)
		var s corev1.Secret
		require.Error(t, c.Get(ctx, ref, &s), "no Secret is created when a file is configured")
	})
}
