package targetserver_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

// seriesLine matches one sample of the requests counter.
var seriesLine = regexp.MustCompile(`^targetserver_requests_total\{code="(\d+)",target="([^"]*)"\} (\S+)$`)

// scrape reads the server's metrics: requests by "target/code".
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := seriesLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, sc.Text())
		out[m[2]+"/"+m[1]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

func promote(t *testing.T, url, target, freight string) {
	t.Helper()
	resp, err := http.Get(url + "/promote?target=" + target + "&freight=" + freight)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// requireRequests checks the counters of every target, within float
// rounding.
func requireRequests(t *testing.T, want, got map[string]float64, step string) {
	t.Helper()
	require.Len(t, got, len(want), "%s: series %v", step, got)
	for k, v := range want {
		require.Contains(t, got, k, step)
		require.InDelta(t, v, got[k], 1e-6, "%s: %s", step, k)
	}
}

func TestTrafficFollowsEachTargetsFreightAndTheIncident(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := &targetserver.Server{Clock: clk}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c := &targetserver.Client{URL: ts.URL}
	ctx := context.Background()
	require.NoError(t, c.SetErrors(ctx, targetserver.Errors{Freight: map[string]float64{"bad": 0.2}}))
	require.NoError(t, c.SetRules(ctx, []targetserver.Rule{{Target: "c", Outcome: targetserver.Fail}}))

	require.Empty(t, scrape(t, ts.URL), "no target runs anything yet")
	promote(t, ts.URL, "a", "good")
	promote(t, ts.URL, "b", "bad")
	promote(t, ts.URL, "c", "good")
	requireRequests(t, map[string]float64{"a/200": 0, "a/500": 0, "b/200": 0, "b/500": 0}, scrape(t, ts.URL),
		"a failed promotion reaches no target")

	clk.Step(10 * time.Second)
	requireRequests(t, map[string]float64{"a/200": 1000, "a/500": 0, "b/200": 800, "b/500": 200}, scrape(t, ts.URL),
		"10s at 100 requests/s, the bad Freight failing 20 %")

	require.NoError(t, c.SetErrors(ctx, targetserver.Errors{Freight: map[string]float64{"bad": 0.2}, Incident: 0.1}))
	clk.Step(10 * time.Second)
	requireRequests(t, map[string]float64{"a/200": 1900, "a/500": 100, "b/200": 1500, "b/500": 500}, scrape(t, ts.URL),
		"the incident adds 10 % on every target")

	promote(t, ts.URL, "b", "good")
	clk.Step(10 * time.Second)
	requireRequests(t, map[string]float64{"a/200": 2800, "a/500": 200, "b/200": 2400, "b/500": 600}, scrape(t, ts.URL),
		"b runs the good Freight again")

	require.NoError(t, c.SetErrors(ctx, targetserver.Errors{Freight: map[string]float64{"bad": 0.2}, Incident: 0.95}))
	promote(t, ts.URL, "a", "bad")
	clk.Step(10 * time.Second)
	requireRequests(t, map[string]float64{"a/200": 2800, "a/500": 1200, "b/200": 2450, "b/500": 1550}, scrape(t, ts.URL),
		"a ratio above 1 fails every request")

	resp, err := http.Get(ts.URL + "/errors")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.JSONEq(t, `{"freight":{"bad":0.2},"incident":0.95}`, string(body))
}

func TestTrafficRefusesInvalidErrorRatios(t *testing.T) {
	srv := &targetserver.Server{}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	require.NoError(t, srv.SetErrors(targetserver.Errors{Incident: 0.5}))
	for _, body := range []string{
		`{"freight":{"bad":1.5}}`,
		`{"freight":{"bad":-0.1}}`,
		`{"incident":2}`,
		`{"incidents":0.1}`,
		`[0.1]`,
	} {
		req, err := http.NewRequest(http.MethodPut, ts.URL+"/errors", strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	}
	resp, err := http.Get(ts.URL + "/errors")
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.JSONEq(t, `{"incident":0.5}`, string(got), "a refused update changes nothing")
}
