package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// baselineErrorRate compares the wave's error rate with the baseline's.
func baselineErrorRate() Metric {
	return Metric{
		Name:             "error-rate-vs-baseline",
		Query:            `sum by (cluster) (rate(errors{cluster=~"{{targets.regex}}"}[1m]))`,
		Interval:         time.Minute,
		Count:            3,
		SuccessCondition: "result <= 1.2 * baseline",
		Baseline:         &BaselineSpec{},
	}
}

// around returns n samples spread evenly over center ± spread.
func around(center, spread float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = center - spread + 2*spread*float64(i)/float64(max(n-1, 1))
	}
	return out
}

// perSeries splits samples over series of `per` samples each.
func perSeries(values []float64, per int) Value {
	v := Value{Kind: KindMatrix}
	for i := 0; i < len(values); i += per {
		v.Series = append(v.Series, Series{Labels: map[string]string{"cluster": string(rune('a' + i/per))}, Values: values[i:min(i+per, len(values))]})
	}
	return v
}

func TestMetricProgram_Evaluate_baseline(t *testing.T) {
	t.Parallel()
	m := compileMetricT(t, baselineErrorRate())
	tests := []struct {
		name       string
		wave, base []float64
		wantPhase  Phase
		wantReason string
	}{
		{
			name: "good Freight: like the baseline",
			wave: around(0.010, 0.004, 20), base: around(0.010, 0.004, 60),
			wantPhase: PhaseSuccessful, wantReason: `wave 0.01 vs baseline 0.01: "result <= 1.2 * baseline" holds`,
		},
		{
			name: "bad Freight: five times the baseline",
			wave: around(0.05, 0.01, 20), base: around(0.010, 0.004, 60),
			wantPhase: PhaseFailed, wantReason: "does not hold and the difference is significant (Mann-Whitney p = ",
		},
		{
			// Every cluster's error rate rises: the ratio holds.
			name: "global incident: both sides up",
			wave: around(0.20, 0.05, 20), base: around(0.19, 0.05, 60),
			wantPhase: PhaseSuccessful, wantReason: "holds",
		},
		{
			name: "worse by the ratio, but noise",
			wave: []float64{0.001, 0.2, 0.001, 0.002, 0.001}, base: []float64{0.001, 0.002, 0.09, 0.001, 0.003, 0.002, 0.001, 0.05},
			wantPhase: PhaseSuccessful, wantReason: "does not hold, but the difference is not significant (Mann-Whitney p = ",
		},
		{
			name: "too few samples to ever be significant",
			wave: []float64{0.5}, base: []float64{0.01, 0.011, 0.012},
			wantPhase: PhaseInconclusive, wantReason: "too few samples: 1 from the wave and 3 from the baseline cannot show a significant difference",
		},
		{
			// Significant with many samples, but within the allowed 20 %.
			name: "significant but small",
			wave: around(0.0110, 0.0005, 200), base: around(0.0100, 0.0005, 200),
			wantPhase: PhaseSuccessful, wantReason: "holds",
		},
		{
			name: "zero baseline, errors on the wave",
			wave: around(0.02, 0.01, 10), base: make([]float64, 30),
			wantPhase: PhaseFailed, wantReason: "wave 0.02 vs baseline 0",
		},
		{
			name: "NaN samples are left out",
			wave: append(around(0.05, 0.01, 20), math.NaN()), base: append(around(0.010, 0.004, 60), math.NaN(), math.NaN()),
			wantPhase: PhaseFailed, wantReason: "20 vs 60 samples",
		},
		{name: "no wave data", wave: nil, base: around(0.01, 0, 3), wantPhase: PhaseInconclusive, wantReason: "no data for the wave's targets"},
		{name: "no baseline data", wave: around(0.01, 0, 3), base: []float64{math.NaN()}, wantPhase: PhaseInconclusive, wantReason: "no data for the baseline targets"},
		{name: "Inf on the wave", wave: []float64{0.01, math.Inf(1)}, base: around(0.01, 0, 3), wantPhase: PhaseInconclusive, wantReason: "a sample of the wave's targets is +Inf"},
		{name: "Inf on the baseline", wave: around(0.01, 0, 3), base: []float64{math.Inf(1)}, wantPhase: PhaseInconclusive, wantReason: "a sample of the baseline targets is +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := m.Evaluate(Measurement{At: t0, Result: perSeries(tt.wave, 5), Baseline: perSeries(tt.base, 5)}, nil)
			require.Equal(t, tt.wantPhase, got.Phase, got.Reason)
			require.Contains(t, got.Reason, tt.wantReason)
			if got.Comparison != nil {
				require.False(t, math.IsNaN(got.Comparison.P))
			}
		})
	}
}

func TestMetricProgram_Evaluate_baselineDirection(t *testing.T) {
	t.Parallel()
	spec := baselineErrorRate()
	spec.Name = "throughput"
	spec.SuccessCondition = "result >= 0.8 * baseline"
	spec.Baseline = &BaselineSpec{Direction: DirectionDecrease, ConfidencePercent: 99}
	m := compileMetricT(t, spec)
	low := Measurement{Result: perSeries(around(50, 5, 30), 5), Baseline: perSeries(around(100, 5, 30), 5)}
	got := m.Evaluate(low, nil)
	require.Equal(t, PhaseFailed, got.Phase, got.Reason)
	require.InDelta(t, 0.01, got.Comparison.Alpha, 1e-12)
	require.True(t, got.Comparison.Significant)

	// Higher throughput is never worse for a Decrease metric.
	either := spec
	either.SuccessCondition = "result <= 1.2 * baseline"
	high := Measurement{Result: perSeries(around(200, 5, 30), 5), Baseline: perSeries(around(100, 5, 30), 5)}
	got = compileMetricT(t, either).Evaluate(high, nil)
	require.Equal(t, PhaseSuccessful, got.Phase, got.Reason)
	require.False(t, got.Comparison.Significant)

	either.Baseline = &BaselineSpec{Direction: DirectionEither}
	got = compileMetricT(t, either).Evaluate(high, nil)
	require.Equal(t, PhaseFailed, got.Phase, got.Reason)
}

func TestMetricProgram_RenderAndWindow(t *testing.T) {
	t.Parallel()
	sets := TargetSets{Targets: targets("a"), Baseline: targets("b", "c")}
	m := compileMetricT(t, baselineErrorRate())
	q, err := m.Render(sets)
	require.NoError(t, err)
	require.Equal(t, Queries{
		Targets:  `sum by (cluster) (rate(errors{cluster=~"(?:a)"}[1m]))`,
		Baseline: `sum by (cluster) (rate(errors{cluster=~"(?:b|c)"}[1m]))`,
	}, q)
	require.Equal(t, Window{Start: t0.Add(-time.Minute), End: t0, Step: 6 * time.Second}, m.Window(t0))

	explicit := baselineErrorRate()
	explicit.Baseline = &BaselineSpec{Query: `sum by (cluster) (rate(errors{cluster!~"{{targets.regex}}"}[1m]))`, Step: 15 * time.Second}
	q, err = compileMetricT(t, explicit).Render(sets)
	require.NoError(t, err)
	require.Equal(t, `sum by (cluster) (rate(errors{cluster!~"(?:a)"}[1m]))`, q.Baseline)

	// The last wave has no baseline left.
	_, err = m.Render(TargetSets{Targets: targets("a")})
	require.ErrorIs(t, err, ErrNoTargets)

	plain := compileMetricT(t, errorRate())
	q, err = plain.Render(sets)
	require.NoError(t, err)
	require.Empty(t, q.Baseline)
	require.Equal(t, Window{Start: t0, End: t0}, plain.Window(t0))
}
