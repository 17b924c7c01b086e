package webhookcert

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	names := []string{"kargo-fleet-webhook.kargo-fleet.svc"}
	fresh, err := Apply(nil, RenewCA, names, now)
	require.NoError(t, err)
	tests := []struct {
		name   string
		bundle Bundle
		names  []string
		at     time.Time
		want   Decision
	}{
		{name: "empty Secret", bundle: nil, names: names, at: now, want: RenewCA},
		{name: "fresh", bundle: fresh, names: names, at: now, want: Keep},
		{name: "serving certificate two thirds through its life", bundle: fresh, names: names,
			at: now.Add(ServingValidity * 2 / 3).Add(time.Hour), want: RenewServing},
		{name: "serving certificate for another Service", bundle: fresh,
			names: []string{"other.kargo-fleet.svc"}, at: now, want: RenewServing},
		{name: "CA two thirds through its life", bundle: fresh, names: names,
			at: now.Add(CAValidity * 2 / 3).Add(time.Hour), want: RenewCA},
		{name: "serving key missing", bundle: without(fresh, KeyKey), names: names, at: now, want: RenewServing},
		{name: "CA key missing", bundle: without(fresh, KeyCAKey), names: names, at: now, want: RenewCA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Plan(tt.bundle, tt.names, tt.at))
		})
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	names := []string{"a.ns.svc", "a.ns.svc.cluster.local"}
	first, err := Apply(nil, RenewCA, names, now)
	require.NoError(t, err)
	verify := func(b Bundle, at time.Time) {
		t.Helper()
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(b[KeyBundle]))
		cert, err := parseCert(b[KeyCert])
		require.NoError(t, err)
		for _, n := range names {
			_, err = cert.Verify(x509.VerifyOptions{DNSName: n, Roots: pool, CurrentTime: at})
			require.NoError(t, err, n)
		}
	}
	verify(first, now)

	// A renewed serving certificate keeps the CA, so the bundle is unchanged.
	later := now.Add(ServingValidity * 3 / 4)
	second, err := Apply(first, RenewServing, names, later)
	require.NoError(t, err)
	require.Equal(t, first[KeyBundle], second[KeyBundle])
	require.NotEqual(t, first[KeyCert], second[KeyCert])
	verify(second, later)

	// A renewed CA is trusted next to the old one while the old one is valid.
	muchLater := now.Add(CAValidity * 3 / 4)
	third, err := Apply(second, RenewCA, names, muchLater)
	require.NoError(t, err)
	verify(third, muchLater)
	oldPool := x509.NewCertPool()
	require.True(t, oldPool.AppendCertsFromPEM(third[KeyBundle]))
	oldCert, err := parseCert(second[KeyCert])
	require.NoError(t, err)
	_, err = oldCert.Verify(x509.VerifyOptions{DNSName: names[0], Roots: oldPool, CurrentTime: later})
	require.NoError(t, err, "the previous serving certificate must still verify against the new bundle")
}

func without(b Bundle, key string) Bundle {
	out := Bundle{}
	for k, v := range b {
		if k != key {
			out[k] = v
		}
	}
	return out
}
