// Package promtest starts a real Prometheus (Debian's `prometheus` package)
// for tests: its own config and storage in a temporary directory,
// listening on 127.0.0.1, scraping the given targets every second.
package promtest

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Server is a real Prometheus started by a test.
type Server struct {
	t       *testing.T
	binary  string
	dir     string
	address string
	cmd     *exec.Cmd
	logs    *lockedBuffer
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
	binary, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("no Prometheus on this machine: apt-get install -y prometheus (.ci/run does)")
	}
	dir := t.TempDir()
	targets := ""
	for _, target := range scrapeTargets {
		targets += fmt.Sprintf("          - %q\n", target)
	}
	job := "  - job_name: fleet\n"
	if opts.Scheme != "" {
		job += fmt.Sprintf("    scheme: %q\n", opts.Scheme)
	}
	if opts.MetricsPath != "" {
		job += fmt.Sprintf("    metrics_path: %q\n", opts.MetricsPath)
	}
	config := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" +
		job + "    static_configs:\n      - targets:\n" + targets
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &Server{t: t, binary: binary, dir: dir, address: listenAddress(t, opts.Listen), logs: &lockedBuffer{}}
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// URL is Prometheus's base URL.
func (p *Server) URL() string { return "http://" + p.address }

// Start runs the binary again after Stop and waits until Prometheus says
// it is ready; its storage is kept.
func (p *Server) Start() {
	p.t.Helper()
	p.cmd = exec.Command(p.binary,
		"--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+p.address,
		"--log.level=warn",
	)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("error starting %s: %v", p.binary, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.URL() + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus at %s not ready after 20s; its log:\n%s", p.address, p.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the process this test started (SIGTERM, then SIGKILL) and
// waits for it.
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
// empty or zero port.
func listenAddress(t *testing.T, listen string) string {
	t.Helper()
	host, port := "127.0.0.1", "0"
	if listen != "" {
		var err error
		if host, port, err = net.SplitHostPort(listen); err != nil {
			t.Fatalf("Prometheus listen address %q: %v", listen, err)
		}
	}
	if port != "0" && port != "" {
		return listen
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
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
