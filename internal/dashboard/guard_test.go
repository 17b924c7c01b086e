package dashboard

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
)

// serveReal serves two Projects' fleets (shop and other) on a real TCP
// listener through Server.Serve, as `kargo-fleet dashboard` does, and
// returns the listen address.
func serveReal(t *testing.T, o Options) string {
	t.Helper()
	objs := dashtest.NewFleet(40, now).Objects()
	objs = append(objs, dashtest.NewFleetIn("other", 40, now).Objects()...)
	o.Reader = fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build()
	o.Scheme, o.Log = testScheme(), logr.Discard()
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ln.Addr().String()
}

// do sends a GET to addr with the given Host and headers and returns the
// response with its body read.
func do(t *testing.T, addr, host, path string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp, ""
	}
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestServe_host(t *testing.T) {
	t.Parallel()
	addr := serveReal(t, Options{AllowedHosts: []string{"fleet.example.com", "proxy.example.com:8443"}})
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	tests := []struct {
		host string
		want int
	}{
		{host: addr, want: http.StatusOK},
		{host: "localhost:" + port, want: http.StatusOK},
		{host: "LOCALHOST:" + port, want: http.StatusOK},
		{host: "fleet.example.com", want: http.StatusOK},
		{host: "fleet.example.com:443", want: http.StatusOK},
		{host: "proxy.example.com:8443", want: http.StatusOK},
		{host: "proxy.example.com", want: http.StatusForbidden},
		{host: "proxy.example.com:" + port, want: http.StatusForbidden},
		{host: "attacker.example:" + port, want: http.StatusForbidden},
		{host: "attacker.example", want: http.StatusForbidden},
		{host: "127.0.0.1.nip.io:" + port, want: http.StatusForbidden},
		{host: "localhost.:" + port, want: http.StatusForbidden},
		{host: "localhost:1" + port, want: http.StatusForbidden},
		{host: "localhost", want: http.StatusForbidden},
		{host: "fleet.example.com.attacker.example", want: http.StatusForbidden},
		{host: "[fleet.example.com]", want: http.StatusForbidden},
		{host: "[::1]:" + port, want: http.StatusForbidden},
	}
	for _, tt := range tests {
		for _, path := range []string{"/projects", "/api" + fleetPage + "/grid", "/static/app.js"} {
			resp, body := do(t, addr, tt.host, path, nil)
			require.Equal(t, tt.want, resp.StatusCode, "Host %q, %s", tt.host, path)
			if tt.want == http.StatusForbidden {
				require.Contains(t, body, "--allowed-host")
				require.NotContains(t, body, "prod", "a refused Host sees no fleet")
			}
		}
	}
}

func TestServe_crossSite(t *testing.T) {
	t.Parallel()
	addr := serveReal(t, Options{})
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		want    int
	}{
		{name: "same origin fetch", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Sec-Fetch-Site": "same-origin"}, want: http.StatusOK},
		{name: "same origin with Origin", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Origin": "http://" + addr}, want: http.StatusOK},
		{name: "typed in the address bar", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Sec-Fetch-Site": "none"}, want: http.StatusOK},
		{name: "no browser headers", path: "/api" + fleetPage + "/targets/eu-west-1-01", want: http.StatusOK},
		{name: "cross-site fetch", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: http.StatusForbidden},
		{name: "same-site fetch from another port", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Sec-Fetch-Site": "same-site"}, want: http.StatusForbidden},
		{name: "cross-site Origin", path: "/api" + fleetPage + "/targets/eu-west-1-01",
			headers: map[string]string{"Origin": "https://attacker.example"}, want: http.StatusForbidden},
		{name: "opaque Origin", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Origin": "null"}, want: http.StatusForbidden},
		{name: "same-origin claim with another Origin", path: "/api" + fleetPage + "/grid",
			headers: map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://attacker.example"},
			want:    http.StatusForbidden},
		{name: "cross-site event stream", path: "/api" + fleetPage + "/events",
			headers: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://attacker.example"},
			want:    http.StatusForbidden},
		{name: "a link from another site opens the page", path: fleetPage,
			headers: map[string]string{"Sec-Fetch-Site": "cross-site"}, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, addr, addr, tt.path, tt.headers)
			require.Equal(t, tt.want, resp.StatusCode)
			if tt.want == http.StatusForbidden {
				require.Contains(t, body, "not served to other sites")
			}
		})
	}
}

func TestServe_securityHeaders(t *testing.T) {
	t.Parallel()
	addr := serveReal(t, Options{Namespaces: []string{dashtest.Namespace}})
	for _, tt := range []struct {
		path, host string
		headers    map[string]string
		want       int
	}{
		{path: "/projects", want: http.StatusOK},
		{path: fleetPage, want: http.StatusOK},
		{path: "/api" + fleetPage + "/grid", want: http.StatusOK},
		{path: "/static/app.js", want: http.StatusOK},
		{path: "/static/app.css", want: http.StatusOK},
		{path: "/", want: http.StatusOK},
		{path: "/nothing", want: http.StatusNotFound},
		{path: "/projects/other", want: http.StatusNotFound},
		{path: "/projects", host: "attacker.example", want: http.StatusForbidden},
		{path: "/api" + fleetPage + "/grid", headers: map[string]string{"Sec-Fetch-Site": "cross-site"},
			want: http.StatusForbidden},
	} {
		resp, _ := do(t, addr, cmp.Or(tt.host, addr), tt.path, tt.headers)
		require.Equal(t, tt.want, resp.StatusCode, tt.path)
		csp := resp.Header.Get("Content-Security-Policy")
		require.Contains(t, csp, "default-src 'none'", tt.path)
		require.Contains(t, csp, "script-src 'self';", tt.path)
		require.Contains(t, csp, "frame-ancestors 'none'", tt.path)
		require.Equal(t, "'self'", directive(csp, "script-src"), "no inline script: %s", tt.path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), tt.path)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), tt.path)
	}
	// The page needs no inline script for the policy to allow it.
	_, page := do(t, addr, addr, fleetPage, nil)
	require.NotRegexp(t, `<script[^>]*>[^<]`, page)
	require.NotRegexp(t, `\son[a-z]+=`, page)
}

// directive returns the value of one directive of a Content-Security-Policy.
func directive(csp, name string) string {
	for d := range strings.SplitSeq(csp, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), name+" "); ok {
			return v
		}
	}
	return ""
}

// openStream opens an event stream and reads its first event; it returns
// the status and a function closing the stream.
func openStream(t *testing.T, addr string) (int, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api"+fleetPage+"/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK {
		event, _ := readEvent(t, bufio.NewReader(resp.Body))
		require.Equal(t, "update", event)
	}
	return resp.StatusCode, func() {
		cancel()
		_ = resp.Body.Close()
	}
}

func TestServe_streamCap(t *testing.T) {
	t.Parallel()
	addr := serveReal(t, Options{})
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range DefaultMaxStreams {
		code, closeStream := openStream(t, addr)
		closers = append(closers, closeStream)
		require.Equal(t, http.StatusOK, code, "stream %d", i+1)
	}
	resp, _ := do(t, addr, addr, "/api"+fleetPage+"/events", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "one stream more than the cap")
	require.Equal(t, "10", resp.Header.Get("Retry-After"))
	code, _ := do(t, addr, addr, "/api"+fleetPage+"/grid", nil)
	require.Equal(t, http.StatusOK, code.StatusCode, "the cap is on streams only")

	// A closed stream frees its slot.
	closers[0]()
	require.Eventually(t, func() bool {
		code, closeStream := openStream(t, addr)
		closers = append(closers, closeStream)
		return code == http.StatusOK
	}, 5*time.Second, 50*time.Millisecond)
}

func TestServe_namespaceBoundary(t *testing.T) {
	t.Parallel()
	other := "/projects/other/fleetstages/prod"
	paths := []string{"/projects/other", other, "/api" + other + "/grid", "/api" + other + "/targets/eu-west-1-01",
		"/api" + other + "/events"}

	bounded := serveReal(t, Options{Namespaces: []string{dashtest.Namespace}})
	for _, path := range paths {
		resp, body := do(t, bounded, bounded, path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		if !strings.HasSuffix(path, "/events") {
			require.Contains(t, body, `Project "other" is not served: this dashboard shows only "shop"`)
		}
	}
	resp, body := do(t, bounded, bounded, "/projects", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `href="/projects/shop/fleetstages/prod"`)
	require.NotContains(t, body, "other")
	resp, _ = do(t, bounded, bounded, fleetPage, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Without -n every Project the viewer may read is served.
	open := serveReal(t, Options{})
	for _, path := range paths {
		resp, _ := do(t, open, open, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	_, body = do(t, open, open, "/projects", nil)
	require.Contains(t, body, `href="/projects/other/fleetstages/prod"`)
}
