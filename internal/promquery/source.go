package promquery

import (
	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Keys of the Secret spec.analysis.prometheus.secretRef names
// (docs/analysis.md).
const (
	SecretTokenKey      = "token"
	SecretUsernameKey   = "username"
	SecretPasswordKey   = "password"
	SecretCAKey         = "ca.crt"
	SecretCertKey       = "tls.crt"
	SecretKeyKey        = "tls.key"
	SecretServerNameKey = "serverName"
)

// ConfigFor returns the configuration of the Prometheus a FleetStage's
// analysis names, with the credentials and TLS settings of its Secret's
// data (nil without a secretRef). The controller and the dashboard reach
// Prometheus through it alike.
func ConfigFor(src *fleetv1alpha1.PrometheusSource, secret map[string][]byte) Config {
	cfg := Config{URL: src.Address}
	if src.Timeout != nil {
		cfg.Timeout = src.Timeout.Duration
	}
	if secret == nil {
		return cfg
	}
	cfg.BearerToken, cfg.Username, cfg.Password = string(secret[SecretTokenKey]), string(secret[SecretUsernameKey]),
		string(secret[SecretPasswordKey])
	cfg.CAPEM, cfg.ClientCertPEM, cfg.ClientKeyPEM = secret[SecretCAKey], secret[SecretCertKey], secret[SecretKeyKey]
	cfg.ServerName = string(secret[SecretServerNameKey])
	return cfg
}
