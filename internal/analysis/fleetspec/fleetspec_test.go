package fleetspec

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

func TestForWave(t *testing.T) {
	t.Parallel()
	fleetMetric := fleetv1alpha1.AnalysisMetric{Name: "fleet", Query: "q", SuccessCondition: "result < 1",
		Interval: &metav1.Duration{Duration: 2 * time.Second}, Count: ptr(int32(3))}
	waveMetric := fleetv1alpha1.AnalysisMetric{Name: "wave", Query: "q", SuccessCondition: "result < 1",
		Baseline: &fleetv1alpha1.BaselineAnalysis{Direction: fleetv1alpha1.BaselineDecrease, ConfidencePercent: ptr(int32(90))}}
	spec := &fleetv1alpha1.FleetStageSpec{
		Analysis: &fleetv1alpha1.FleetAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{fleetMetric},
			InconclusiveTimeout: &metav1.Duration{Duration: time.Hour}, OnInconclusiveTimeout: fleetv1alpha1.InconclusiveAskApproval},
		Waves: []fleetv1alpha1.Wave{
			{Name: "pilot"},
			{Name: "canary", Analysis: &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{waveMetric},
				OnInconclusiveTimeout: fleetv1alpha1.InconclusiveFail}},
			{Name: "last", Analysis: &fleetv1alpha1.WaveAnalysis{}},
		},
	}
	a, ok := ForWave(spec, "pilot")
	require.True(t, ok)
	require.Equal(t, analysis.Analysis{Metrics: []analysis.Metric{{Name: "fleet", Query: "q", SuccessCondition: "result < 1",
		Interval: 2 * time.Second, Count: 3}}, InconclusiveTimeout: time.Hour, OnInconclusiveTimeout: analysis.InconclusiveAskApproval}, a)

	a, ok = ForWave(spec, "canary")
	require.True(t, ok)
	require.Equal(t, "wave", a.Metrics[0].Name)
	require.Equal(t, &analysis.BaselineSpec{Direction: analysis.DirectionDecrease, ConfidencePercent: 90}, a.Metrics[0].Baseline)
	require.Equal(t, time.Hour, a.InconclusiveTimeout, "unset in the wave: the fleet's")
	require.Equal(t, analysis.InconclusiveFail, a.OnInconclusiveTimeout)

	_, ok = ForWave(spec, "last")
	require.False(t, ok, "empty metrics turn the analysis off")
	_, ok = ForWave(&fleetv1alpha1.FleetStageSpec{}, "pilot")
	require.False(t, ok)
}

// TestStatusRoundTrip checks that a run state written to status and read
// back decides the same, per-target failures and the last value included.
func TestStatusRoundTrip(t *testing.T) {
	t.Parallel()
	p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{{Name: "p99", Query: `max by (c) (x{c=~"{{targets.regex}}"})`,
		SuccessCondition: "result < 0.5", Interval: time.Minute, Count: 3, PerTarget: &analysis.PerTargetSpec{SeriesLabel: "c"}}}})
	require.NoError(t, err)
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	value := 0.1
	value += 0.2 // 0.30000000000000004: not a short decimal
	outcomes := []analysis.Outcome{
		{At: started.Add(time.Minute), Phase: analysis.PhaseError, Reason: "Prometheus is unavailable"},
		{At: started.Add(2 * time.Minute), Phase: analysis.PhaseFailed, HasValue: true, Value: value, Reason: "r1",
			Targets: []analysis.TargetOutcome{{Target: "a", Phase: analysis.PhaseFailed, Reason: "a is slow"}}},
	}
	states := []analysis.RunState{analysis.ReplayRun(started, outcomes)}
	now := started.Add(150 * time.Second)
	d := p.Decide(states, now)
	st := Status(p, started, states, d)
	require.Equal(t, "0.30000000000000004", st.Metrics[0].Last.Value, "the shortest form that parses back")

	back := RunStates(p, st)
	require.Equal(t, states, back)
	require.Equal(t, d, p.Decide(back, now))
}

func TestStatusBoundsTargetFailures(t *testing.T) {
	t.Parallel()
	p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{{Name: "m", Query: `max by (c) (x{c=~"{{targets.regex}}"})`,
		SuccessCondition: "result < 0.5", PerTarget: &analysis.PerTargetSpec{SeriesLabel: "c"}}}})
	require.NoError(t, err)
	s := analysis.NewRunState(time.Time{})
	for i := range 150 {
		o := analysis.Outcome{Phase: analysis.PhaseFailed, Targets: []analysis.TargetOutcome{{Target: fmt.Sprintf("t%03d", i), Phase: analysis.PhaseFailed}}}
		s.Record(o)
		if i == 149 {
			s.Record(o) // t149 failed twice: it is kept
		}
	}
	st := Status(p, time.Time{}, []analysis.RunState{s}, p.Decide([]analysis.RunState{s}, time.Time{}))
	require.Len(t, st.Metrics[0].TargetFailures, fleetv1alpha1.MaxAnalysisTargetFailures)
	require.Contains(t, st.Metrics[0].TargetFailures, fleetv1alpha1.TargetFailureCount{Target: "t149", Failures: 2})
}

func ptr[T any](v T) *T { return &v }
