package webhookcert

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzPlan: whatever a webhook certificate Secret holds, Plan and Apply
// turn it into a bundle that Plan keeps: a CA with its key, a serving key
// pair the TLS stack loads, a serving certificate for every DNS name, and a
// CA bundle that verifies it. A bundle Plan keeps as it is already is one.
func FuzzPlan(f *testing.F) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	names := []string{"kargo-fleet-webhook.kargo-fleet.svc"}
	fresh, err := Apply(nil, RenewCA, names, now)
	require.NoError(f, err)
	other, err := Apply(nil, RenewCA, names, now)
	require.NoError(f, err)
	add := func(b Bundle, offset time.Duration) {
		f.Add(b[KeyCA], b[KeyCAKey], b[KeyCert], b[KeyKey], b[KeyBundle], int64(offset))
	}
	add(fresh, 0)
	add(fresh, ServingValidity)
	add(fresh, CAValidity)
	add(Bundle{KeyCA: fresh[KeyCA], KeyCAKey: other[KeyCAKey], KeyCert: fresh[KeyCert], KeyKey: fresh[KeyKey],
		KeyBundle: fresh[KeyBundle]}, 0)
	add(Bundle{KeyCA: fresh[KeyCA], KeyCAKey: fresh[KeyCAKey], KeyCert: fresh[KeyCert], KeyKey: other[KeyKey],
		KeyBundle: fresh[KeyBundle]}, 0)
	add(Bundle{KeyCA: fresh[KeyCA], KeyCAKey: fresh[KeyCAKey], KeyCert: fresh[KeyCert], KeyKey: fresh[KeyKey],
		KeyBundle: other[KeyBundle]}, 0)
	add(Bundle{KeyCA: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, 0)
	add(Bundle{}, -time.Hour)
	f.Fuzz(func(t *testing.T, ca, caKey, cert, key, caBundle []byte, offset int64) {
		at := now.Add(time.Duration(offset))
		b := Bundle{}
		for k, v := range map[string][]byte{KeyCA: ca, KeyCAKey: caKey, KeyCert: cert, KeyKey: key, KeyBundle: caBundle} {
			if len(v) > 0 {
				b[k] = v
			}
		}
		d := Plan(b, names, at)
		if d == Keep {
			requireServes(t, b, names, at)
		}
		if d == RenewCA && len(stillValid(b[KeyCA], at)) == 0 {
			// A new CA owes nothing to the input but the old CA it keeps
			// trusting: with none left, issuing (the costly part) is what
			// the seeds already check.
			return
		}
		out, err := Apply(b, d, names, at)
		require.NoError(t, err, "Apply after Plan always succeeds (decision %d)", d)
		require.Equal(t, Keep, Plan(out, names, at), "Plan keeps what Apply wrote")
		requireServes(t, out, names, at)
		if d == Keep {
			require.Equal(t, b, out)
		}
		for rest := stillValid(out[KeyBundle], at); len(rest) > 0; {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			require.NotNil(t, blk, "the still-valid CAs are whole PEM blocks")
			c, err := x509.ParseCertificate(blk.Bytes)
			require.NoError(t, err)
			require.True(t, at.Before(c.NotAfter))
		}
	})
}

// requireServes checks that b serves names at the given time.
func requireServes(t *testing.T, b Bundle, names []string, at time.Time) {
	t.Helper()
	_, err := tls.X509KeyPair(b[KeyCert], b[KeyKey])
	require.NoError(t, err, "the serving key pair loads")
	ca, err := parseCert(b[KeyCA])
	require.NoError(t, err)
	caKey, err := parseKey(b[KeyCAKey])
	require.NoError(t, err)
	require.True(t, caKey.PublicKey.Equal(ca.PublicKey), "the CA key is the CA's")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b[KeyBundle]))
	require.True(t, bytes.Contains(b[KeyBundle], b[KeyCA]) || pool.AppendCertsFromPEM(b[KeyCA]))
	c, err := parseCert(b[KeyCert])
	require.NoError(t, err)
	for _, n := range names {
		_, err := c.Verify(x509.VerifyOptions{DNSName: n, Roots: pool, CurrentTime: at})
		require.NoError(t, err, "the CA bundle verifies the serving certificate for %s", n)
	}
}
