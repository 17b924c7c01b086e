package release

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSignBlob signs as `cosign sign-blob --key` does and verifies as
// `cosign verify-blob --key` does: with the published public key only,
// and never once one byte of the file changed or with another key.
func TestSignBlob(t *testing.T) {
	t.Parallel()
	s, err := NewSigner("")
	require.NoError(t, err)
	require.True(t, s.Ephemeral)
	data := []byte("kargo-fleet_1.2.3_linux_amd64.tar.gz content")
	sig, err := s.SignBlob(data)
	require.NoError(t, err)

	pubPEM, err := s.PublicKeyPEM()
	require.NoError(t, err)
	pub, err := ParsePublicKey(pubPEM)
	require.NoError(t, err)
	require.NoError(t, VerifyBlob(pub, data, sig))
	require.NoError(t, VerifyBlob(pub, data, append(sig, '\n')), "a trailing newline, as an editor adds, is ignored")

	for i := range data {
		changed := append([]byte(nil), data...)
		changed[i] ^= 0x01
		require.Error(t, VerifyBlob(pub, changed, sig), "byte %d changed", i)
	}
	other, err := NewSigner("")
	require.NoError(t, err)
	require.Error(t, VerifyBlob(other.Public(), data, sig), "another key")
	require.Error(t, VerifyBlob(pub, data, []byte("not base64!")))
}

func TestNewSignerFromFile(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	sec1, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	p384DER, err := x509.MarshalECPrivateKey(p384)
	require.NoError(t, err)
	tests := []struct {
		name    string
		pem     string
		wantErr string
	}{
		{name: "SEC 1 after EC PARAMETERS, as openssl ecparam writes", pem: string(pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8}})) +
			string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))},
		{name: "PKCS 8", pem: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))},
		{name: "P-384", pem: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: p384DER})), wantErr: "not an ECDSA P-256 key"},
		{name: "cosign's encrypted key", pem: "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
			wantErr: "no unencrypted PEM private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "key.pem")
			require.NoError(t, os.WriteFile(path, []byte(tt.pem), 0o600))
			s, err := NewSigner(path)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.False(t, s.Ephemeral)
			require.True(t, s.Public().Equal(&key.PublicKey))
		})
	}
}
