package promquery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestConfigFor(t *testing.T) {
	t.Parallel()
	src := &fleetv1alpha1.PrometheusSource{Address: "https://prometheus.monitoring:9090",
		Timeout: &metav1.Duration{Duration: 10 * time.Second}}
	require.Equal(t, Config{URL: src.Address, Timeout: 10 * time.Second}, ConfigFor(src, nil))
	secret := map[string][]byte{SecretTokenKey: []byte("t"), SecretUsernameKey: []byte("u"), SecretPasswordKey: []byte("p"),
		SecretCAKey: []byte("ca"), SecretCertKey: []byte("crt"), SecretKeyKey: []byte("key"), SecretServerNameKey: []byte("prom")}
	require.Equal(t, Config{URL: src.Address, Timeout: 10 * time.Second, BearerToken: "t", Username: "u", Password: "p",
		CAPEM: []byte("ca"), ClientCertPEM: []byte("crt"), ClientKeyPEM: []byte("key"), ServerName: "prom"}, ConfigFor(src, secret))
}
