package stepserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// freeAddr returns a loopback address with a free port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kargo-fleet-steps"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServer_Start(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	tests := []struct {
		name   string
		tls    bool
		scheme string
	}{
		{name: "plain", scheme: "http"},
		{name: "tls", tls: true, scheme: "https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Addr: freeAddr(t)}
			httpClient := &http.Client{Timeout: time.Second}
			if tt.tls {
				opts.TLSCertFile, opts.TLSKeyFile = certFile, keyFile
				httpClient.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
			}
			c := newFakeClient(t)
			srv := New(opts, Deps{Reader: c, Keys: testKey, Steps: steps.DefaultSteps(steps.NewAPIStore(c, c), nil, nil)})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Start(ctx) }()
			require.Eventually(t, func() bool {
				resp, err := httpClient.Get(tt.scheme + "://" + opts.Addr + "/healthz")
				if err != nil {
					return false
				}
				_ = resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}, 5*time.Second, 10*time.Millisecond)
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err, "a shutdown is not an error")
			case <-time.After(15 * time.Second):
				require.Fail(t, "the server did not stop")
			}
		})
	}
}

func TestServer_StartFails(t *testing.T) {
	t.Parallel()
	c := newFakeClient(t)
	err := New(Options{Addr: freeAddr(t)}, Deps{Reader: c, Keys: steptoken.StaticKey("short")}).
		Start(context.Background())
	require.ErrorContains(t, err, "error loading step signing key")

	err = New(Options{Addr: "256.0.0.1:1"}, Deps{Reader: c, Keys: testKey}).Start(context.Background())
	require.ErrorContains(t, err, "error listening")
}

// TestServer_TLSRotation replaces the certificate files under a serving
// step server: new connections get the new certificate without a restart.
func TestServer_TLSRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, oldPool := selfSigned(t, dir)
	opts := Options{Addr: freeAddr(t), TLSCertFile: certFile, TLSKeyFile: keyFile}
	c := newFakeClient(t)
	srv := New(opts, Deps{Reader: c, Keys: testKey, Steps: steps.DefaultSteps(steps.NewAPIStore(c, c), nil, nil)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Start(ctx) }()
	trusts := func(pool *x509.CertPool) bool {
		cl := &http.Client{Timeout: time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}}
		resp, err := cl.Get("https://" + opts.Addr + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	require.Eventually(t, func() bool { return trusts(oldPool) }, 5*time.Second, 10*time.Millisecond)

	_, _, newPool := selfSigned(t, dir) // the same files, a new key and certificate
	require.Eventually(t, func() bool { return trusts(newPool) }, 15*time.Second, 50*time.Millisecond,
		"the renewed certificate is served without a restart")
	require.False(t, trusts(oldPool), "the replaced certificate is no longer served")
}
