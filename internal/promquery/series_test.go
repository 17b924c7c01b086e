package promquery

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

const matrixBody = `{"status":"success","data":{"resultType":"matrix","result":[` +
	`{"metric":{"cluster":"a"},"values":[[1700000000,"0.5"],[1700000060,"0.25"]]}]}}`

func TestClient_RangeSeries(t *testing.T) {
	t.Parallel()
	type observed struct {
		kind, outcome string
	}
	tests := []struct {
		name         string
		handler      http.HandlerFunc
		want         []TimeSeries
		wantKind     analysis.QueryErrorKind
		wantObserved observed
	}{
		{
			name:    "every sample with its time",
			handler: answer(http.StatusOK, matrixBody, 0),
			want: []TimeSeries{{Labels: map[string]string{"cluster": "a"}, Points: []Point{
				{T: time.Unix(1700000000, 0).UTC(), V: 0.5}, {T: time.Unix(1700000060, 0).UTC(), V: 0.25}}}},
			wantObserved: observed{kind: QueryRange, outcome: "ok"},
		},
		{
			name:         "a vector is not a range",
			handler:      answer(http.StatusOK, vectorBody, 0),
			wantKind:     analysis.QueryInvalid,
			wantObserved: observed{kind: QueryRange, outcome: "ok"},
		},
		{
			name:         "Prometheus fails",
			handler:      answer(http.StatusServiceUnavailable, `{"status":"error","errorType":"unavailable","error":"down"}`, 0),
			wantKind:     analysis.QueryUnavailable,
			wantObserved: observed{kind: QueryRange, outcome: string(analysis.QueryUnavailable)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			var mu sync.Mutex
			var got []observed
			c, err := New(Config{URL: srv.URL, Timeout: 5 * time.Second, Observe: func(kind string, took time.Duration, outcome string) {
				mu.Lock()
				defer mu.Unlock()
				require.GreaterOrEqual(t, took, time.Duration(0))
				got = append(got, observed{kind: kind, outcome: outcome})
			}})
			require.NoError(t, err)
			series, _, err := c.RangeSeries(context.Background(), "up", time.Unix(1700000000, 0), time.Unix(1700000060, 0), time.Minute)
			if tt.wantKind != "" {
				var qe *analysis.QueryError
				require.ErrorAs(t, err, &qe)
				require.Equal(t, tt.wantKind, qe.Kind)
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.want, series)
			}
			require.Equal(t, []observed{tt.wantObserved}, got, "every query is observed once")
		})
	}
}

func TestRangeStep(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1700000000, 0)
	tests := []struct {
		name   string
		span   time.Duration
		points int
		want   time.Duration
	}{
		{name: "an hour in 240 points", span: time.Hour, points: 240, want: 15 * time.Second},
		{name: "never below a second", span: 10 * time.Second, points: 240, want: time.Second},
		{name: "an empty window", span: 0, points: 240, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, RangeStep(t0, t0.Add(tt.span), tt.points))
		})
	}
}
