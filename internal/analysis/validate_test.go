package analysis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestAnalysis_Validate(t *testing.T) {
	t.Parallel()
	withMetric := func(mutate func(*Metric)) Analysis {
		m := errorRate()
		mutate(&m)
		return Analysis{Metrics: []Metric{m}}
	}
	tests := []struct {
		name     string
		analysis Analysis
		path     *field.Path
		check    QueryChecker
		want     []string
	}{
		{name: "valid", analysis: Analysis{Metrics: []Metric{errorRate()}}},
		{name: "defaults are valid", analysis: Analysis{Metrics: []Metric{{Name: "m", Query: `up{c=~"{{targets.regex}}"}`, SuccessCondition: "result > 0"}}}},
		{name: "baseline defaults are valid", analysis: Analysis{Metrics: []Metric{baselineErrorRate()}}},
		{name: "no metrics", analysis: Analysis{}, want: []string{"metrics: Required value"}},
		{
			name: "too many metrics", analysis: Analysis{Metrics: make([]Metric, MaxMetrics+1)},
			want: []string{"metrics: Too many: 11: must have at most 10 items"},
		},
		{
			name: "condition does not compile", analysis: withMetric(func(m *Metric) { m.SuccessCondition = "result <" }),
			want: []string{`metrics[0].successCondition: Invalid value: "result <": unexpected token EOF`},
		},
		{
			name: "baseline in a plain metric", analysis: withMetric(func(m *Metric) { m.SuccessCondition = "result < baseline" }),
			want: []string{"metrics[0].successCondition: Invalid value", "unknown name baseline"},
		},
		{
			name: "condition missing", analysis: withMetric(func(m *Metric) { m.SuccessCondition = "" }),
			want: []string{"metrics[0].successCondition: Required value"},
		},
		{
			name: "condition too long", analysis: withMetric(func(m *Metric) { m.SuccessCondition = strings.Repeat("1", 3000) }),
			want: []string{"metrics[0].successCondition: Too long"},
		},
		{
			name: "unsafe condition", analysis: withMetric(func(m *Metric) { m.SuccessCondition = "all(values, any(values, # > 1))" }),
			want: []string{"metrics[0].successCondition: Invalid value", "predicate"},
		},
		{
			name: "query missing", analysis: withMetric(func(m *Metric) { m.Query = "" }),
			want: []string{"metrics[0].query: Required value"},
		},
		{
			name: "query without the wave's targets", analysis: withMetric(func(m *Metric) { m.Query = `sum(rate(errors[5m]))` }),
			want: []string{"metrics[0].query: Invalid value", "must select the wave's targets"},
		},
		{
			name: "placeholder outside a string", analysis: withMetric(func(m *Metric) { m.Query = `up{c=~{{targets.regex}}}` }),
			want: []string{"metrics[0].query: Invalid value", "must stand inside"},
		},
		{
			name: "PromQL refused by the checker", analysis: withMetric(func(m *Metric) { m.Query = `rate(up{c=~"{{targets.regex}}"}` }),
			check: func(q string) error {
				if strings.Count(q, "(") > strings.Count(q, ")") {
					return errors.New("1:5: parse error: unclosed left parenthesis")
				}
				return nil
			},
			want: []string{"metrics[0].query: Invalid value", "invalid PromQL: 1:5: parse error: unclosed left parenthesis"},
		},
		{
			name: "bad name", analysis: withMetric(func(m *Metric) { m.Name = "Error Rate" }),
			want: []string{`metrics[0].name: Invalid value: "Error Rate"`},
		},
		{
			name: "duplicate names", analysis: Analysis{Metrics: []Metric{errorRate(), errorRate()}},
			want: []string{`metrics[1].name: Duplicate value: "error-rate"`},
		},
		{
			name: "numbers out of bounds",
			analysis: withMetric(func(m *Metric) {
				m.Interval, m.Count, m.FailureLimit, m.InconclusiveLimit = time.Millisecond, -1, -1, -1
			}),
			want: []string{"metrics[0].interval: Invalid value", "metrics[0].count: Invalid value", "metrics[0].failureLimit: Invalid value", "metrics[0].inconclusiveLimit: Invalid value"},
		},
		{
			name: "failure limit reaches count", analysis: withMetric(func(m *Metric) { m.FailureLimit = 3 }),
			want: []string{"metrics[0].failureLimit: Invalid value: 3: must be between 0 and count − 1 (2)"},
		},
		{
			name: "analysis longer than a day", analysis: withMetric(func(m *Metric) { m.Interval, m.Count = time.Hour, 25 }),
			want: []string{"metrics[0].count: Invalid value: 25: interval × count is 25h0m0s"},
		},
		{
			name: "per-target label", analysis: withMetric(func(m *Metric) { m.PerTarget = &PerTargetSpec{SeriesLabel: "cluster-name", TargetLabel: "a b"} }),
			want: []string{"metrics[0].perTarget.seriesLabel: Invalid value", "metrics[0].perTarget.targetLabel: Invalid value"},
		},
		{
			name: "per-target and baseline",
			analysis: Analysis{Metrics: []Metric{func() Metric {
				m := baselineErrorRate()
				m.PerTarget = &PerTargetSpec{SeriesLabel: "cluster"}
				return m
			}()}},
			want: []string{"metrics[0].baseline: Forbidden"},
		},
		{
			name: "baseline bounds",
			analysis: Analysis{Metrics: []Metric{func() Metric {
				m := baselineErrorRate()
				m.Baseline = &BaselineSpec{Direction: "Up", ConfidencePercent: 100, Step: 2 * time.Minute, Query: "up"}
				return m
			}()}},
			want: []string{
				`metrics[0].baseline.direction: Unsupported value: "Up"`,
				"metrics[0].baseline.confidencePercent: Invalid value: 100",
				"metrics[0].baseline.step: Invalid value",
				"metrics[0].baseline.query: Invalid value", "must select targets",
			},
		},
		{
			name: "analysis fields", analysis: Analysis{Metrics: []Metric{errorRate()}, InconclusiveTimeout: -time.Second, OnInconclusiveTimeout: "Retry"},
			want: []string{"inconclusiveTimeout: Invalid value", `onInconclusiveTimeout: Unsupported value: "Retry"`},
		},
		{
			name: "paths under a parent", analysis: withMetric(func(m *Metric) { m.SuccessCondition = "" }),
			path: field.NewPath("spec", "analysis"),
			want: []string{"spec.analysis.metrics[0].successCondition: Required value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := tt.analysis.Validate(tt.path, tt.check)
			if len(tt.want) == 0 {
				require.Empty(t, errs)
				return
			}
			all := errs.ToAggregate().Error()
			for _, w := range tt.want {
				require.Contains(t, all, w)
			}
			if tt.check == nil {
				_, err := Compile(tt.analysis)
				var invalid *InvalidError
				require.ErrorAs(t, err, &invalid)
			}
		})
	}
}

func TestAnalysis_Validate_checkerSeesASampleQuery(t *testing.T) {
	t.Parallel()
	var seen []string
	m := baselineErrorRate()
	m.Baseline.Query = `sum(rate(errors{cluster=~'{{baseline.label "region" | regex}}'}[1m]))`
	errs := Analysis{Metrics: []Metric{m}}.Validate(nil, func(q string) error {
		seen = append(seen, q)
		return nil
	})
	require.Empty(t, errs)
	require.Equal(t, []string{
		`sum by (cluster) (rate(errors{cluster=~"(?:sample_______)"}[1m]))`,
		`sum(rate(errors{cluster=~'(?:sample_________________________)'}[1m]))`,
	}, seen)
}

func TestAnalysis_WithDefaults(t *testing.T) {
	t.Parallel()
	in := Analysis{Metrics: []Metric{{Name: "m", Baseline: &BaselineSpec{}, PerTarget: &PerTargetSpec{SeriesLabel: "c"}}}}
	got := in.WithDefaults()
	require.Equal(t, DefaultInconclusiveTimeout, got.InconclusiveTimeout)
	require.Equal(t, InconclusiveFail, got.OnInconclusiveTimeout)
	m := got.Metrics[0]
	require.Equal(t, DefaultInterval, m.Interval)
	require.Equal(t, DefaultCount, m.Count)
	require.Equal(t, BaselineSpec{Direction: DirectionIncrease, ConfidencePercent: DefaultConfidencePercent, Step: 6 * time.Second}, *m.Baseline)
	// The input is not changed.
	require.Equal(t, BaselineSpec{}, *in.Metrics[0].Baseline)
	require.NotSame(t, in.Metrics[0].PerTarget, m.PerTarget)
	short := Metric{Interval: 5 * time.Second, Baseline: &BaselineSpec{}}.WithDefaults()
	require.Equal(t, time.Second, short.Baseline.Step)
}
