package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is the start of every test run.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// targets builds targets with the given ids and a region label each.
func targets(ids ...string) []Target {
	out := make([]Target, len(ids))
	for i, id := range ids {
		out[i] = Target{ID: id, Labels: map[string]string{"region": "r" + id}}
	}
	return out
}

// vector builds an instant vector with one series per label value of
// label.
func vector(label string, values map[string]float64) Value {
	v := Value{Kind: KindVector}
	for key, value := range values {
		v.Series = append(v.Series, Series{Labels: map[string]string{label: key}, Values: []float64{value}})
	}
	return v
}

// scalar builds a scalar result.
func scalar(value float64) Value {
	return Value{Kind: KindScalar, Series: []Series{{Values: []float64{value}}}}
}

// samples builds a matrix of one series holding values.
func samples(values ...float64) Value {
	return Value{Kind: KindMatrix, Series: []Series{{Labels: map[string]string{"cluster": "x"}, Values: values}}}
}

// compileMetricT compiles a single-metric analysis.
func compileMetricT(t testing.TB, m Metric) *MetricProgram {
	t.Helper()
	p, err := Compile(Analysis{Metrics: []Metric{m}})
	require.NoError(t, err)
	return p.Metrics()[0]
}

// errorRate is a plain metric: the wave's error rate below 1%.
func errorRate() Metric {
	return Metric{
		Name:             "error-rate",
		Query:            `sum(rate(errors{cluster=~"{{targets.regex}}"}[1m])) / sum(rate(requests{cluster=~"{{targets.regex}}"}[1m]))`,
		Interval:         time.Minute,
		Count:            3,
		SuccessCondition: "result < 0.01",
	}
}
