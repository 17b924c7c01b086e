package promquery

import (
	"bytes"
	"context"
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

// prometheusServer is a real Prometheus (Debian's `prometheus` package)
// started by a test: its own config and storage in a temporary directory,
// listening on 127.0.0.1, scraping the given targets every second.
type prometheusServer struct {
	t       *testing.T
	binary  string
	dir     string
	address string
	cmd     *exec.Cmd
	logs    *lockedBuffer
}

// startPrometheus starts Prometheus scraping scrapeTargets (host:port) and
// returns once it is ready. It stops when the test ends.
func startPrometheus(t *testing.T, scrapeTargets ...string) *prometheusServer {
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
	config := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" +
		"  - job_name: fleet\n    static_configs:\n      - targets:\n" + targets
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheusServer{t: t, binary: binary, dir: dir, address: freeAddress(t), logs: &lockedBuffer{}}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// URL is Prometheus's base URL.
func (p *prometheusServer) URL() string { return "http://" + p.address }

// start runs the binary and waits until Prometheus says it is ready.
func (p *prometheusServer) start() {
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

// stop stops the process this test started (SIGTERM, then SIGKILL) and
// waits for it.
func (p *prometheusServer) stop() {
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

// waitFor polls query until cond holds on its result, for at most 20s.
func (p *prometheusServer) waitFor(c *Client, query string, cond func(series int, values []float64) bool) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := c.Instant(context.Background(), query, time.Now())
		if err == nil {
			var values []float64
			for _, s := range v.Series {
				values = append(values, s.Values...)
			}
			if cond(len(v.Series), values) {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s never met its condition (last error %v); Prometheus log:\n%s", query, err, p.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeAddress returns a 127.0.0.1 address with a port free right now.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
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
