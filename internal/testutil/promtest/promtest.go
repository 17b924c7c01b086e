// Package promtest starts a real Prometheus (Debian's `prometheus` package,
// through internal/promserver) for tests: its own config and storage in a
// temporary directory, listening on 127.0.0.1, scraping the given targets
// every second.
package promtest

import (
	"testing"

	"github.com/kargo-fleet/kargo-fleet/internal/promserver"
)

// Server is a real Prometheus started by a test.
type Server struct {
	t   *testing.T
	srv *promserver.Server
}

// Options says where a Prometheus started by StartWith listens and how it
// scrapes.
type Options struct {
	// Listen is the host:port Prometheus listens on; empty, or port 0: a
	// port free right now on that host (default 127.0.0.1).
	Listen string
	// Scheme is the scrape targets' scheme; empty: http.
	Scheme string
	// MetricsPath is the scrape targets' metrics path; empty: /metrics.
	MetricsPath string
}

// Start starts Prometheus scraping scrapeTargets (host:port) and returns
// once it is ready. It stops when the test ends.
func Start(t *testing.T, scrapeTargets ...string) *Server {
	t.Helper()
	return StartWith(t, Options{}, scrapeTargets...)
}

// StartWith is Start with Options.
func StartWith(t *testing.T, opts Options, scrapeTargets ...string) *Server {
	t.Helper()
	srv, err := promserver.Start(promserver.Options{Dir: t.TempDir(), ScrapeTargets: scrapeTargets,
		Listen: opts.Listen, Scheme: opts.Scheme, MetricsPath: opts.MetricsPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &Server{t: t, srv: srv}
}

// URL is Prometheus's base URL.
func (p *Server) URL() string { return p.srv.URL() }

// Start runs the binary again after Stop and waits until Prometheus says
// it is ready; its storage is kept.
func (p *Server) Start() {
	p.t.Helper()
	if err := p.srv.Start(); err != nil {
		p.t.Fatal(err)
	}
}

// Stop stops the process this test started (SIGINT, then SIGKILL) and
// waits for it.
func (p *Server) Stop() { p.srv.Stop() }

// Logs returns what Prometheus logged, for failure messages.
func (p *Server) Logs() string { return p.srv.Logs() }
