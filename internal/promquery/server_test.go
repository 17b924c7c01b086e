package promquery

import (
	"context"
	"testing"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// waitFor polls query until cond holds on its result, for at most 20s.
func waitFor(t *testing.T, p *promtest.Server, c *Client, query string, cond func(series int, values []float64) bool) {
	t.Helper()
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
			t.Fatalf("%s never met its condition (last error %v); Prometheus log:\n%s", query, err, p.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
