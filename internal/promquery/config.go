package promquery

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultTimeout bounds one query when Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// Config says where Prometheus is and how to reach it.
type Config struct {
	// URL is Prometheus's base URL, e.g. https://prometheus.monitoring:9090.
	URL string
	// BearerToken, when set, is sent as `Authorization: Bearer`.
	BearerToken string
	// Username and Password, when Username is set, are sent as basic auth.
	Username, Password string
	// CAPEM, when set, are the PEM certificates that verify Prometheus's
	// TLS certificate instead of the system roots.
	CAPEM []byte
	// ClientCertPEM and ClientKeyPEM, when set, are the client certificate
	// presented to Prometheus.
	ClientCertPEM, ClientKeyPEM []byte
	// ServerName, when set, is the name verified in Prometheus's
	// certificate instead of the URL's host.
	ServerName string
	// Timeout bounds one query, sent to Prometheus as its query timeout
	// too. Default DefaultTimeout.
	Timeout time.Duration
	// Observe, when set, is told of every query: its kind (QueryInstant or
	// QueryRange), how long it took, and its outcome ("ok", or the
	// analysis.QueryErrorKind of its failure).
	Observe func(kind string, took time.Duration, outcome string)
}

// Kinds of query Config.Observe is told of.
const (
	QueryInstant = "instant"
	QueryRange   = "range"
)

// validate checks the configuration and returns the parsed URL.
func (c Config) validate() (*url.URL, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fmt.Errorf("error parsing Prometheus URL %q: %w", c.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q must be http(s)://host[:port][/path]", c.URL)
	}
	if c.BearerToken != "" && c.Username != "" {
		return nil, errors.New("give a bearer token or basic auth, not both")
	}
	if (len(c.ClientCertPEM) == 0) != (len(c.ClientKeyPEM) == 0) {
		return nil, errors.New("a client certificate needs its key, and a key its certificate")
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("timeout %s must not be negative", c.Timeout)
	}
	return u, nil
}

// transport builds the HTTP transport: TLS from the configuration, and the
// credentials added to every request.
func (c Config) transport() (http.RoundTripper, error) {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("http.DefaultTransport is not an *http.Transport")
	}
	t := base.Clone()
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if len(c.CAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(c.CAPEM) {
			return nil, errors.New("the CA holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	if len(c.ClientCertPEM) > 0 {
		cert, err := tls.X509KeyPair(c.ClientCertPEM, c.ClientKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("error loading the client certificate: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	t.TLSClientConfig = tlsConfig
	return &authRoundTripper{next: t, bearer: c.BearerToken, username: c.Username, password: c.Password}, nil
}

// authRoundTripper adds the configured credentials to each request.
type authRoundTripper struct {
	next               http.RoundTripper
	bearer             string
	username, password string
}

// RoundTrip implements http.RoundTripper. It leaves the caller's request
// untouched, as the interface requires.
func (a *authRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.bearer == "" && a.username == "" {
		return a.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	if a.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+a.bearer)
	} else {
		r.SetBasicAuth(a.username, a.password)
	}
	return a.next.RoundTrip(r)
}
