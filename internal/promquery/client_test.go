package promquery

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// answer returns a handler that answers every request with status and
// body, after delay (cut short when the client goes away or the test
// ends).
func answer(status int, body string, delay time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice a client that left.
		_ = r.ParseForm()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

const vectorBody = `{"status":"success","data":{"resultType":"vector","result":[` +
	`{"metric":{"cluster":"a"},"value":[1700000000,"0.5"]},` +
	`{"metric":{"cluster":"b"},"value":[1700000000,"NaN"]}]},"warnings":["partial response"]}`

func TestClient_Instant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		timeout     time.Duration
		want        analysis.Value
		wantKind    analysis.QueryErrorKind
		wantMessage string
	}{
		{
			name:    "vector with warnings",
			handler: answer(http.StatusOK, vectorBody, 0),
			want: analysis.Value{Kind: analysis.KindVector, Warnings: []string{"partial response"}, Series: []analysis.Series{
				{Labels: map[string]string{"cluster": "a"}, Values: []float64{0.5}},
				{Labels: map[string]string{"cluster": "b"}, Values: []float64{nanValue}},
			}},
		},
		{
			name:        "bad query",
			handler:     answer(http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}`, 0),
			wantKind:    analysis.QueryInvalid,
			wantMessage: "1:5: parse error: unexpected end of input",
		},
		{
			name:        "query Prometheus cannot execute",
			handler:     answer(http.StatusUnprocessableEntity, `{"status":"error","errorType":"execution","error":"found duplicate series for the match group"}`, 0),
			wantKind:    analysis.QueryInvalid,
			wantMessage: "found duplicate series for the match group",
		},
		{
			name:        "5xx",
			handler:     answer(http.StatusServiceUnavailable, "upstream connect error", 0),
			wantKind:    analysis.QueryUnavailable,
			wantMessage: "Prometheus answered with an error (server error: 503: upstream connect error)",
		},
		{
			name:        "query timed out in Prometheus",
			handler:     answer(http.StatusServiceUnavailable, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, 0),
			wantKind:    analysis.QueryUnavailable,
			wantMessage: "Prometheus answered with an error (server error: 503",
		},
		{
			name:        "slow",
			handler:     answer(http.StatusOK, vectorBody, 5*time.Second),
			timeout:     200 * time.Millisecond,
			wantKind:    analysis.QueryUnavailable,
			wantMessage: "Prometheus did not answer within 200ms",
		},
		{
			name:        "credentials refused",
			handler:     answer(http.StatusUnauthorized, "Unauthorized", 0),
			wantKind:    analysis.QueryUnavailable,
			wantMessage: "Prometheus refused the request (client error: 401: Unauthorized): check the URL and the credentials",
		},
		{
			name:        "not Prometheus",
			handler:     answer(http.StatusOK, "<html>login</html>", 0),
			wantKind:    analysis.QueryUnavailable,
			wantMessage: "Prometheus answered with something else than its API (",
		},
		{
			name:        "a string result",
			handler:     answer(http.StatusOK, `{"status":"success","data":{"resultType":"string","result":[1700000000,"x"]}}`, 0),
			wantKind:    analysis.QueryInvalid,
			wantMessage: `the query returned unexpected value type "string"; a number or series were expected`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			c, err := New(Config{URL: srv.URL, Timeout: tt.timeout})
			require.NoError(t, err)
			start := time.Now()
			got, err := c.Instant(context.Background(), "up", time.Unix(1700000000, 0))
			require.Less(t, time.Since(start), 3*time.Second)
			if tt.wantKind == "" {
				require.NoError(t, err)
				requireValue(t, tt.want, got)
				return
			}
			var qe *analysis.QueryError
			require.ErrorAs(t, err, &qe)
			require.Equal(t, tt.wantKind, qe.Kind, qe.Message)
			require.Contains(t, qe.Message, tt.wantMessage)
		})
	}
}

func TestClient_unreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(answer(http.StatusOK, vectorBody, 0))
	url := srv.URL
	srv.Close()
	requireUnavailable(t, Config{URL: url, Timeout: time.Second}, "Prometheus is unreachable", "connection refused")
}

func TestClient_credentialsAndTLS(t *testing.T) {
	t.Parallel()
	var gotAuth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		answer(http.StatusOK, vectorBody, 0)(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for _, cfg := range []Config{
		{URL: srv.URL, CAPEM: ca, BearerToken: "t0ken"},
		{URL: srv.URL, CAPEM: ca, Username: "fleet", Password: "s3cret"},
		{URL: srv.URL, CAPEM: ca},
	} {
		c, err := New(cfg)
		require.NoError(t, err)
		_, err = c.Instant(context.Background(), "up", time.Now())
		require.NoError(t, err)
	}
	require.Equal(t, []string{"Bearer t0ken", "Basic ZmxlZXQ6czNjcmV0", ""}, gotAuth)

	// Without the CA, the server's certificate is not trusted.
	requireUnavailable(t, Config{URL: srv.URL}, "certificate")
}

// requireUnavailable queries the Prometheus cfg names and requires an
// Unavailable error whose message holds each of want.
func requireUnavailable(t *testing.T, cfg Config, want ...string) {
	t.Helper()
	c, err := New(cfg)
	require.NoError(t, err)
	_, err = c.Instant(context.Background(), "up", time.Now())
	var qe *analysis.QueryError
	require.ErrorAs(t, err, &qe)
	require.Equal(t, analysis.QueryUnavailable, qe.Kind)
	for _, w := range want {
		require.Contains(t, qe.Message, w)
	}
}

func TestNew_invalidConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{URL: "prometheus:9090"}, "must be http(s)://"},
		{Config{URL: "ftp://prometheus"}, "must be http(s)://"},
		{Config{URL: "http://%zz"}, "error parsing Prometheus URL"},
		{Config{URL: "http://p", BearerToken: "t", Username: "u"}, "not both"},
		{Config{URL: "http://p", ClientCertPEM: []byte("x")}, "needs its key"},
		{Config{URL: "http://p", ClientCertPEM: []byte("x"), ClientKeyPEM: []byte("y")}, "error loading the client certificate"},
		{Config{URL: "http://p", CAPEM: []byte("not PEM")}, "no PEM certificate"},
		{Config{URL: "http://p", Timeout: -time.Second}, "must not be negative"},
	} {
		_, err := New(tt.cfg)
		require.ErrorContains(t, err, tt.wantErr, "%+v", tt.cfg)
	}
}

func TestClient_Measure_errorsNameTheSide(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		if r.Form.Get("query") == "baseline" {
			answer(http.StatusBadRequest, `{"status":"error","errorType":"bad_data","error":"bad baseline"}`, 0)(w, r)
			return
		}
		answer(http.StatusOK, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"cluster":"a"},"values":[[1700000000,"1"],[1700000001,"2"]]}]}}`, 0)(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{URL: srv.URL})
	require.NoError(t, err)
	p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{{
		Name: "m", Query: `up{c=~"{{targets.regex}}"}`, SuccessCondition: "result <= baseline", Baseline: &analysis.BaselineSpec{},
	}}})
	require.NoError(t, err)
	at := time.Unix(1700000060, 0)
	meas := c.Measure(context.Background(), p.Metrics()[0], analysis.Queries{Targets: "wave", Baseline: "baseline"}, at)
	require.Equal(t, at, meas.At)
	require.Equal(t, []float64{1, 2}, meas.Result.Series[0].Values)
	var qe *analysis.QueryError
	require.ErrorAs(t, meas.Err, &qe)
	require.Equal(t, analysis.QueryInvalid, qe.Kind)
	require.Equal(t, "the query of the baseline targets: bad baseline", qe.Message)
	out := p.Metrics()[0].Evaluate(meas, nil)
	require.Equal(t, analysis.PhaseError, out.Phase)
	require.Equal(t, "Prometheus refused the query: the query of the baseline targets: bad baseline", out.Reason)
}
