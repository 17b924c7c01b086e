package manager

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_metricsOptions(t *testing.T) {
	t.Parallel()
	secure := metricsOptions(":8080", true, "/etc/kargo-fleet/metrics-tls")
	require.True(t, secure.SecureServing)
	require.NotNil(t, secure.FilterProvider, "the API server authenticates and authorizes scrapers")
	require.Equal(t, "/etc/kargo-fleet/metrics-tls", secure.CertDir, "the certificate the ServiceMonitor verifies")

	plain := metricsOptions(":8080", false, "/etc/kargo-fleet/metrics-tls")
	require.False(t, plain.SecureServing)
	require.Nil(t, plain.FilterProvider)
	require.Empty(t, plain.CertDir)
}
