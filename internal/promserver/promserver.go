// Package promserver runs a real Prometheus (Debian's `prometheus`
// package) on this machine: its own configuration and storage in a
// directory, listening on a free loopback port, scraping the given
// addresses. The demo and the tests (through internal/testutil/promtest)
// start it.
package promserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Binary is the program Start runs, looked up on PATH.
const Binary = "prometheus"

// Defaults of Options.
const (
	// DefaultScrapeInterval is how often each target is scraped.
	DefaultScrapeInterval = time.Second
	// DefaultReadyTimeout bounds the wait for Prometheus to say it is ready.
	DefaultReadyTimeout = 20 * time.Second
)

// ErrNotInstalled says that no Prometheus is on PATH.
var ErrNotInstalled = errors.New("no prometheus on PATH (Debian: apt-get install prometheus)")

// Options configure Start.
type Options struct {
	// Dir holds the configuration and the storage; required.
	Dir string
	// ScrapeTargets are the host:port addresses scraped at /metrics.
	ScrapeTargets []string
	// ScrapeInterval is how often they are scraped (default
	// DefaultScrapeInterval).
	ScrapeInterval time.Duration
	// ReadyTimeout bounds each start (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Listen is the host:port Prometheus listens on; empty, or port 0: a
	// port free right now on that host (default 127.0.0.1).
	Listen string
	// Scheme is the scrape targets' scheme; empty: http.
	Scheme string
	// MetricsPath is the scrape targets' metrics path; empty: /metrics.
	MetricsPath string
}

// Server is a running (or stopped) Prometheus.
type Server struct {
	binary  string
	dir     string
	address string
	timeout time.Duration
	cmd     *exec.Cmd
	logs    *lockedBuffer
}

// Installed returns the path of the prometheus binary, or ErrNotInstalled.
func Installed() (string, error) {
	path, err := exec.LookPath(Binary)
	if err != nil {
		return "", ErrNotInstalled
	}
	return path, nil
}

// Start writes the configuration into o.Dir and starts Prometheus; it
// returns once Prometheus says it is ready. Stop stops it.
func Start(o Options) (*Server, error) {
	binary, err := Installed()
	if err != nil {
		return nil, err
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = DefaultScrapeInterval
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	targets := ""
	for _, target := range o.ScrapeTargets {
		targets += fmt.Sprintf("          - %q\n", target)
	}
	job := "  - job_name: fleet\n"
	if o.Scheme != "" {
		job += fmt.Sprintf("    scheme: %q\n", o.Scheme)
	}
	if o.MetricsPath != "" {
		job += fmt.Sprintf("    metrics_path: %q\n", o.MetricsPath)
	}
	config := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n"+
		"%s    static_configs:\n      - targets:\n%s", o.ScrapeInterval, o.ScrapeInterval, job, targets)
	if err := os.WriteFile(filepath.Join(o.Dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("error writing the Prometheus configuration: %w", err)
	}
	address, err := listenAddress(o.Listen)
	if err != nil {
		return nil, err
	}
	p := &Server{binary: binary, dir: o.Dir, address: address, timeout: o.ReadyTimeout, logs: &lockedBuffer{}}
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// URL is Prometheus's base URL.
func (p *Server) URL() string { return "http://" + p.address }

// Start runs the binary again after Stop and waits until Prometheus says
// it is ready; its storage is kept.
func (p *Server) Start() error {
	p.cmd = exec.Command(p.binary, //nolint:gosec // the binary found on PATH, with arguments of our own
		"--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+p.address,
		"--log.level=warn",
	)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		p.cmd = nil
		return fmt.Errorf("error starting %s: %w", p.binary, err)
	}
	deadline := time.Now().Add(p.timeout)
	for {
		if p.ready() {
			return nil
		}
		if time.Now().After(deadline) {
			p.Stop()
			return fmt.Errorf("prometheus at %s not ready after %s; its log:\n%s", p.address, p.timeout, p.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready asks Prometheus whether it is ready.
func (p *Server) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops the process (SIGINT, then SIGKILL after 10 s) and waits for
// it. Stopping a stopped server does nothing.
func (p *Server) Stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// Logs returns what Prometheus logged, for failure messages.
func (p *Server) Logs() string { return p.logs.String() }

// listenAddress returns listen, with a port free right now in place of an
// empty or zero port (host default 127.0.0.1).
func listenAddress(listen string) (string, error) {
	host, port := "127.0.0.1", "0"
	if listen != "" {
		var err error
		if host, port, err = net.SplitHostPort(listen); err != nil {
			return "", fmt.Errorf("prometheus listen address %q: %w", listen, err)
		}
	}
	if port != "0" && port != "" {
		return listen, nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("error finding a free port for Prometheus: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// lockedBuffer collects a process's output for failure messages.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
