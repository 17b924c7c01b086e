package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetricProgram_Evaluate_single(t *testing.T) {
	t.Parallel()
	m := compileMetricT(t, errorRate())
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name       string
		meas       Measurement
		wantPhase  Phase
		wantValue  float64
		wantReason string
	}{
		{name: "below the threshold", meas: Measurement{At: t0, Result: scalar(0.002)}, wantPhase: PhaseSuccessful, wantValue: 0.002, wantReason: `result = 0.002: "result < 0.01" holds`},
		{name: "above the threshold", meas: Measurement{At: t0, Result: scalar(0.0342)}, wantPhase: PhaseFailed, wantValue: 0.0342, wantReason: `result = 0.0342: "result < 0.01" does not hold`},
		{name: "one series of a vector", meas: Measurement{Result: vector("cluster", map[string]float64{"a": 0.001})}, wantPhase: PhaseSuccessful, wantValue: 0.001},
		{name: "empty result", meas: Measurement{Result: Value{Kind: KindVector}}, wantPhase: PhaseInconclusive, wantReason: "no data: the query returned an empty result"},
		{name: "series without samples", meas: Measurement{Result: samples()}, wantPhase: PhaseInconclusive, wantReason: "no data"},
		{name: "NaN", meas: Measurement{Result: scalar(nan)}, wantPhase: PhaseInconclusive, wantReason: "no data: the value is NaN"},
		{name: "+Inf", meas: Measurement{Result: scalar(inf)}, wantPhase: PhaseInconclusive, wantReason: "the value is +Inf"},
		{name: "-Inf passes no condition", meas: Measurement{Result: scalar(math.Inf(-1))}, wantPhase: PhaseInconclusive, wantReason: "the value is -Inf"},
		{name: "range: latest finite sample", meas: Measurement{Result: samples(0.5, 0.002, nan)}, wantPhase: PhaseSuccessful, wantValue: 0.002},
		{name: "range with an Inf sample", meas: Measurement{Result: samples(0.001, inf, 0.001)}, wantPhase: PhaseInconclusive, wantReason: "+Inf"},
		{
			name:       "several series where one was expected",
			meas:       Measurement{Result: vector("cluster", map[string]float64{"a": 0.001, "b": 0.5, "c": 0.001, "d": 0})},
			wantPhase:  PhaseError,
			wantReason: "the query returned 4 series where one was expected",
		},
		{
			name:       "Prometheus unreachable",
			meas:       Measurement{Err: &QueryError{Kind: QueryUnavailable, Message: "dial tcp 127.0.0.1:9090: connection refused"}},
			wantPhase:  PhaseError,
			wantReason: "Prometheus is unavailable: dial tcp 127.0.0.1:9090: connection refused",
		},
		{
			name:       "bad query",
			meas:       Measurement{Err: &QueryError{Kind: QueryInvalid, Message: "1:5: parse error: unexpected end of input"}},
			wantPhase:  PhaseError,
			wantReason: "Prometheus refused the query: 1:5: parse error",
		},
		{name: "other error", meas: Measurement{Err: errors.New("boom")}, wantPhase: PhaseError, wantReason: "error taking the measurement: boom"},
		{
			name:       "warnings are reported",
			meas:       Measurement{Result: Value{Kind: KindScalar, Series: []Series{{Values: []float64{0}}}, Warnings: []string{"partial response"}}},
			wantPhase:  PhaseSuccessful,
			wantReason: "(Prometheus warned: partial response)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := m.Evaluate(tt.meas, nil)
			require.Equal(t, tt.wantPhase, got.Phase, got.Reason)
			require.Equal(t, tt.meas.At, got.At)
			require.Contains(t, got.Reason, tt.wantReason)
			if tt.wantPhase == PhaseSuccessful || tt.wantPhase == PhaseFailed {
				require.True(t, got.HasValue)
				require.InDelta(t, tt.wantValue, got.Value, 1e-12)
			}
			require.False(t, math.IsNaN(got.Value) || math.IsInf(got.Value, 0))
		})
	}
}

func TestMetricProgram_Evaluate_reasonIsBounded(t *testing.T) {
	t.Parallel()
	m := compileMetricT(t, errorRate())
	got := m.Evaluate(Measurement{Err: &QueryError{Kind: QueryInvalid, Message: strings.Repeat("é", 5000)}}, nil)
	require.LessOrEqual(t, len(got.Reason), maxReasonLength)
	require.True(t, strings.HasSuffix(got.Reason, "..."))
}

func TestMetricProgram_Evaluate_perTarget(t *testing.T) {
	t.Parallel()
	spec := errorRate()
	spec.Query = `sum by (cluster) (rate(errors{cluster=~"{{targets.regex}}"}[1m]))`
	spec.PerTarget = &PerTargetSpec{SeriesLabel: "cluster"}
	m := compileMetricT(t, spec)
	wave := targets("a", "b", "c")
	tests := []struct {
		name        string
		result      Value
		wave        []Target
		wantPhase   Phase
		wantTargets map[string]Phase
		wantReason  string
	}{
		{
			name:        "all successful",
			result:      vector("cluster", map[string]float64{"a": 0.001, "b": 0, "c": 0.009}),
			wantPhase:   PhaseSuccessful,
			wantTargets: map[string]Phase{"a": PhaseSuccessful, "b": PhaseSuccessful, "c": PhaseSuccessful},
			wantReason:  "all 3 targets successful",
		},
		{
			name:        "one target fails with its value",
			result:      vector("cluster", map[string]float64{"a": 0.001, "b": 0.05, "c": 0}),
			wantPhase:   PhaseFailed,
			wantTargets: map[string]Phase{"a": PhaseSuccessful, "b": PhaseFailed, "c": PhaseSuccessful},
			wantReason:  `1 of 3 targets failed (b: result = 0.05: "result < 0.01" does not hold); 2 successful`,
		},
		{
			name:        "a target without a series is inconclusive",
			result:      vector("cluster", map[string]float64{"a": 0.001, "b": 0.05}),
			wantPhase:   PhaseInconclusive,
			wantTargets: map[string]Phase{"a": PhaseSuccessful, "b": PhaseFailed, "c": PhaseInconclusive},
			wantReason:  `c: no data: no series with cluster="c"`,
		},
		{
			name:        "NaN for one target",
			result:      vector("cluster", map[string]float64{"a": 0.001, "b": math.NaN(), "c": 0}),
			wantPhase:   PhaseInconclusive,
			wantTargets: map[string]Phase{"a": PhaseSuccessful, "b": PhaseInconclusive, "c": PhaseSuccessful},
		},
		{
			name: "two series for one target",
			result: Value{Kind: KindVector, Series: []Series{
				{Labels: map[string]string{"cluster": "a", "pod": "1"}, Values: []float64{0}},
				{Labels: map[string]string{"cluster": "a", "pod": "2"}, Values: []float64{0}},
				{Labels: map[string]string{"cluster": "b"}, Values: []float64{0}},
				{Labels: map[string]string{"cluster": "c"}, Values: []float64{0}},
			}},
			wantPhase:   PhaseError,
			wantTargets: map[string]Phase{"a": PhaseError, "b": PhaseSuccessful, "c": PhaseSuccessful},
			wantReason:  `2 series with cluster="a" where one was expected`,
		},
		{
			name:        "series of other targets are ignored",
			result:      vector("cluster", map[string]float64{"a": 0, "b": 0, "c": 0, "z": 1}),
			wantPhase:   PhaseSuccessful,
			wantTargets: map[string]Phase{"a": PhaseSuccessful, "b": PhaseSuccessful, "c": PhaseSuccessful},
		},
		{
			name:       "empty wave",
			result:     vector("cluster", map[string]float64{"a": 0}),
			wave:       []Target{},
			wantPhase:  PhaseError,
			wantReason: "no targets",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := wave
			if tt.wave != nil {
				w = tt.wave
			}
			got := m.Evaluate(Measurement{At: t0, Result: tt.result}, w)
			require.Equal(t, tt.wantPhase, got.Phase, got.Reason)
			require.Contains(t, got.Reason, tt.wantReason)
			gotTargets := map[string]Phase{}
			for _, to := range got.Targets {
				gotTargets[to.Target] = to.Phase
			}
			if tt.wantTargets != nil {
				require.Equal(t, tt.wantTargets, gotTargets)
			}
		})
	}
}

func TestMetricProgram_Evaluate_perTargetByLabel(t *testing.T) {
	t.Parallel()
	spec := errorRate()
	spec.Query = `sum by (cluster_name) (rate(errors{cluster_name=~"{{targets.label "name" | regex}}"}[1m]))`
	spec.PerTarget = &PerTargetSpec{SeriesLabel: "cluster_name", TargetLabel: "name"}
	m := compileMetricT(t, spec)
	wave := []Target{
		{ID: "t1", Labels: map[string]string{"name": "eu-1"}},
		{ID: "t2", Labels: map[string]string{"name": "eu-2"}},
		{ID: "t3"},
	}
	got := m.Evaluate(Measurement{Result: vector("cluster_name", map[string]float64{"eu-1": 0, "eu-2": 0.5})}, wave)
	require.Equal(t, PhaseInconclusive, got.Phase)
	require.Equal(t, []TargetOutcome{
		{Target: "t1", Phase: PhaseSuccessful, HasValue: true, Value: 0, Reason: `result = 0: "result < 0.01" holds`},
		{Target: "t2", Phase: PhaseFailed, HasValue: true, Value: 0.5, Reason: `result = 0.5: "result < 0.01" does not hold`},
		{Target: "t3", Phase: PhaseInconclusive, Reason: `the target has no label "name" to find its series by`},
	}, got.Targets)
}
