package promquery

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// Client queries one Prometheus. It is safe for concurrent use.
type Client struct {
	api     v1.API
	timeout time.Duration
	observe func(kind string, took time.Duration, outcome string)
}

// New returns a client for the Prometheus cfg names. It does not connect:
// an unreachable Prometheus shows at the first query.
func New(cfg Config) (*Client, error) {
	if _, err := cfg.validate(); err != nil {
		return nil, err
	}
	rt, err := cfg.transport()
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("error creating the Prometheus client: %w", err)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Client{api: v1.NewAPI(c), timeout: timeout, observe: cfg.Observe}, nil
}

// Instant evaluates query at `at`. A failure is an *analysis.QueryError.
func (c *Client) Instant(ctx context.Context, query string, at time.Time) (analysis.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	v, warnings, _, err := c.api.Query(ctx, query, at, v1.WithTimeout(c.timeout))
	if qerr := c.done(ctx, QueryInstant, start, err); qerr != nil {
		return analysis.Value{}, qerr
	}
	return toValue(v, warnings)
}

// Range evaluates query over [start, end] every step. A failure is an
// *analysis.QueryError.
func (c *Client) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) (analysis.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	began := time.Now()
	v, warnings, _, err := c.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(c.timeout))
	if qerr := c.done(ctx, QueryRange, began, err); qerr != nil {
		return analysis.Value{}, qerr
	}
	return toValue(v, warnings)
}

// done tells the observer how long a query took and how it ended, and
// returns its failure classified, or nil.
func (c *Client) done(ctx context.Context, kind string, start time.Time, err error) *analysis.QueryError {
	took := time.Since(start)
	var qerr *analysis.QueryError
	outcome := "ok"
	if err != nil {
		qerr = classify(ctx, err, c.timeout)
		outcome = string(qerr.Kind)
	}
	if c.observe != nil {
		c.observe(kind, took, outcome)
	}
	return qerr
}

// Measure takes one measurement of m at `at`: the rendered queries over the
// window the metric reads (an instant, or for a baseline metric the same
// range on both sides). It never fails: a failed query goes into the
// measurement's Err, for analysis to judge (it is an Error, never a pass).
func (c *Client) Measure(ctx context.Context, m *analysis.MetricProgram, q analysis.Queries, at time.Time) analysis.Measurement {
	w := m.Window(at)
	meas := analysis.Measurement{At: at}
	var err error
	if meas.Result, err = c.read(ctx, q.Targets, w); err != nil {
		meas.Err = withSide(err, "the query of the wave's targets")
		return meas
	}
	if q.Baseline == "" {
		return meas
	}
	if meas.Baseline, err = c.read(ctx, q.Baseline, w); err != nil {
		meas.Err = withSide(err, "the query of the baseline targets")
	}
	return meas
}

// read runs query over w: an instant or a range.
func (c *Client) read(ctx context.Context, query string, w analysis.Window) (analysis.Value, error) {
	if w.Step == 0 {
		return c.Instant(ctx, query, w.End)
	}
	return c.Range(ctx, query, w.Start, w.End, w.Step)
}
