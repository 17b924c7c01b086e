package promquery

import (
	"context"
	"math"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// TimeSeries is one series of a range query with the time of each sample,
// for plotting.
type TimeSeries struct {
	// Labels are the series' labels.
	Labels map[string]string
	// Points are its samples, oldest first; native histogram samples are
	// left out.
	Points []Point
}

// Point is one sample.
type Point struct {
	T time.Time
	V float64
}

// RangeSeries evaluates query over [start, end] every step and returns
// each series with its timestamps (Range drops them: a measurement judges
// the values alone). Results past MaxSeries or MaxSamples, and non-matrix
// results, are an Invalid *analysis.QueryError.
func (c *Client) RangeSeries(ctx context.Context, query string, start, end time.Time, step time.Duration) ([]TimeSeries, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	began := time.Now()
	v, warnings, _, err := c.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, v1.WithTimeout(c.timeout))
	if qerr := c.done(ctx, QueryRange, began, err); qerr != nil {
		return nil, nil, qerr
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, nil, &analysis.QueryError{Kind: analysis.QueryInvalid, Message: "the range query returned a " + typeName(v) +
			"; series were expected"}
	}
	samples := 0
	for _, ss := range m {
		samples += len(ss.Values)
	}
	if err := checkSize(len(m), samples); err != nil {
		return nil, nil, err
	}
	out := make([]TimeSeries, 0, len(m))
	for _, ss := range m {
		ts := TimeSeries{Labels: toLabels(ss.Metric), Points: make([]Point, 0, len(ss.Values))}
		for _, p := range ss.Values {
			ts.Points = append(ts.Points, Point{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
		}
		out = append(out, ts)
	}
	return out, append([]string(nil), warnings...), nil
}

// RangeStep is the step that reads [start, end] in at most points samples
// per series, at least a second.
func RangeStep(start, end time.Time, points int) time.Duration {
	span := end.Sub(start)
	if span <= 0 || points <= 0 {
		return time.Second
	}
	step := time.Duration(math.Ceil(float64(span) / float64(points)))
	return max(step.Round(time.Second), time.Second)
}
