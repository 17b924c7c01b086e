package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func testScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// newTestServer serves a 200-target fleet from a fake client.
func newTestServer(t *testing.T, clk clock.Clock, coalesce time.Duration) (*Server, *httptest.Server) {
	t.Helper()
	fleet := dashtest.NewFleet(200, clk.Now())
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(fleet.Objects()...).Build()
	s, err := New(context.Background(), Options{Reader: c, Scheme: testScheme(), Namespaces: []string{dashtest.Namespace},
		KargoURL: "https://kargo.example.com", Clock: clk, Coalesce: coalesce, Log: logr.Discard()})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = s.Handler(ts.Listener.Addr())
	ts.Start()
	t.Cleanup(ts.Close)
	return s, ts
}

const fleetPage = "/projects/shop/fleetstages/prod"

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestHandler_readOnly(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, clocktesting.NewFakeClock(now), 0)
	paths := []string{"/projects", "/projects/shop", fleetPage, "/api" + fleetPage + "/grid",
		"/api" + fleetPage + "/targets/eu-west-1-01", "/api" + fleetPage + "/events", "/static/app.js", "/static/app.css"}
	for _, path := range paths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
			http.MethodOptions, "PROPFIND"} {
			req, err := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", method, path)
			require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
		}
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if strings.HasSuffix(path, "/events") && method == http.MethodGet {
				continue // a stream: TestHandler_events reads it
			}
			req, err := http.NewRequest(method, ts.URL+path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", method, path)
		}
	}
}

func TestHandler_pages(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, clocktesting.NewFakeClock(now), 0)
	tests := []struct {
		name       string
		path       string
		wantCode   int
		want       []string
		wantAbsent []string
	}{
		{name: "projects", path: "/projects", wantCode: http.StatusOK,
			want: []string{`<a href="/projects/shop">shop</a>`, `<a href="/projects/shop/fleetstages/prod">prod</a>`,
				"prod-57f6eecd64"}},
		{name: "FleetStage", path: fleetPage, wantCode: http.StatusOK, want: []string{
			"FleetStage shop/prod", `<b id="fleet-targets">200</b> targets in 4 waves`,
			"v1.4.0 (97e5d51) <b>32</b>", "v1.5.0 (fba72e3) <b>168</b>",
			`<tr class="wave" data-wave="canary"><th>canary</th>`, `<td class="count">18/20</td>`,
			"2 of 2 allowed failures: the next failure halts",
			`<td class="count">148/158</td>`, `<span class="inflight">10 in flight</span>`,
			`<span class="failure-reason">PromotionFailed</span> <b>2</b>`,
			"simulated failure of step &#34;sync&#34; (argocd-update)",
			`<option selected>region</option>`,
		}, wantAbsent: []string{`id="gate"`}},
		{name: "unknown FleetStage", path: "/projects/shop/fleetstages/nope", wantCode: http.StatusNotFound},
		{name: "unknown target", path: "/api" + fleetPage + "/targets/nope", wantCode: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, body := get(t, ts.URL+tt.path)
			require.Equal(t, tt.wantCode, code, body)
			for _, w := range tt.want {
				require.Contains(t, body, w)
			}
			for _, w := range tt.wantAbsent {
				require.NotContains(t, body, w)
			}
		})
	}
}

func TestHandler_grid(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, clocktesting.NewFakeClock(now), 0)
	code, body := get(t, ts.URL+"/api"+fleetPage+"/grid")
	require.Equal(t, http.StatusOK, code)
	var g Grid
	require.NoError(t, json.Unmarshal([]byte(body), &g))
	require.Equal(t, "region", g.GroupBy)
	require.Equal(t, []string{"wave", "region", "tier"}, g.GroupKeys)
	require.Len(t, g.IDs, 200)
	require.Len(t, g.States, 200)
	require.Len(t, g.Groups, len(dashtest.Regions))
	require.Equal(t, GridGroup{Name: "ap-south-1", Count: 40}, g.Groups[0])
	require.Equal(t, 2, strings.Count(g.States, "f"))
	require.Equal(t, 10, strings.Count(g.States, "i"))
	require.Equal(t, 20, strings.Count(g.States, "p"))
	require.Equal(t, []int{}, g.Drifted)

	code, body = get(t, ts.URL+"/api"+fleetPage+"/grid?groupBy=wave")
	require.Equal(t, http.StatusOK, code)
	var byWave Grid
	require.NoError(t, json.Unmarshal([]byte(body), &byWave))
	require.Equal(t, []GridGroup{{"pilot", 2}, {"canary", 20}, {"general", 158}, {"critical", 20}}, byWave.Groups)
	require.NotEqual(t, g.Key, byWave.Key, "a new grouping is a new grid")
	require.Equal(t, 2, strings.Count(byWave.States[2:22], "f"), "two canary targets failed")
}

func TestHandler_target(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, clocktesting.NewFakeClock(now), 0)
	// The first two canary targets failed: targets 2 and 3 of the fleet.
	code, body := get(t, ts.URL+"/api"+fleetPage+"/targets/eu-west-1-01")
	require.Equal(t, http.StatusOK, code, body)
	var d TargetDetail
	require.NoError(t, json.Unmarshal([]byte(body), &d))
	require.Equal(t, "canary", d.Wave)
	require.Equal(t, "Failed", d.State)
	require.Equal(t, "PromotionFailed", d.Reason)
	require.Equal(t, dashtest.FailureMessage, d.Message)
	require.Equal(t, "prod.eu-west-1-01", d.Stage)
	require.Equal(t, map[string]string{"region": "eu-west-1", "tier": "standard"}, d.Labels)
	require.Equal(t, "https://eu-west-1-01.k8s.example.com", d.Params["server"])
	require.Equal(t, "https://kargo.example.com/project/shop/stage/prod.eu-west-1-01", d.KargoURL)
	require.NotNil(t, d.LastPromotion)
	require.Equal(t, "Failed", d.LastPromotion.Phase)
	require.Equal(t, dashtest.Rollout, d.LastPromotion.Rollout)
	require.True(t, strings.HasPrefix(d.Current, "v1.4.0 ("), d.Current)
	require.False(t, d.Drifted)
}

// readEvent reads one server-sent event.
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var event, data string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && event != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestHandler_events(t *testing.T) {
	t.Parallel()
	s, ts := newTestServer(t, clock.RealClock{}, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/api"+fleetPage+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Empty(t, resp.Header.Get("Content-Encoding"), "event streams are never compressed")
	r := bufio.NewReader(resp.Body)

	event, data := readEvent(t, r)
	require.Equal(t, "update", event)
	var u update
	require.NoError(t, json.Unmarshal([]byte(data), &u))
	require.Contains(t, u.Summary, `<td class="count">18/20</td>`)
	require.Len(t, u.States, 200)

	// A burst of changes is pushed at most once per coalescing interval.
	nc, err := s.namespace(ctx, dashtest.Namespace)
	require.NoError(t, err)
	start := time.Now()
	for range 20 {
		nc.hub.notify()
		time.Sleep(5 * time.Millisecond)
	}
	event, _ = readEvent(t, r)
	require.Equal(t, "update", event)
	first := time.Since(start)
	nc.hub.notify()
	event, _ = readEvent(t, r)
	require.Equal(t, "update", event)
	require.GreaterOrEqual(t, time.Since(start)-first, 250*time.Millisecond,
		"the second push waits out the coalescing interval")

	pushes := make(chan struct{}, 10)
	go func() {
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			pushes <- struct{}{}
		}
	}()
	select {
	case <-pushes:
		t.Fatal("the burst caused more pushes than the coalescing allows")
	case <-time.After(700 * time.Millisecond):
	}
}

func TestHandler_noCluster(t *testing.T) {
	t.Parallel()
	unreachable := fake.NewClientBuilder().WithScheme(testScheme()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
		},
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
		},
	}).Build()
	ts := serveReader(t, unreachable)
	code, body := get(t, ts.URL+fleetPage)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "cannot reach the Kubernetes API server")
	require.Contains(t, body, "connection refused")
}

// serveReader serves the dashboard of Project shop from r, at now, until
// the test ends.
func serveReader(t *testing.T, r client.Reader) *httptest.Server {
	t.Helper()
	s, err := New(context.Background(), Options{Reader: r, Scheme: testScheme(), Namespaces: []string{dashtest.Namespace},
		Clock: clocktesting.NewFakeClock(now), Log: logr.Discard()})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = s.Handler(ts.Listener.Addr())
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}
