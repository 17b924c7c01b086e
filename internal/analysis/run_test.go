package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// outcomesAt builds one outcome per phase, a minute apart from t0+1m.
func outcomesAt(phases ...Phase) []Outcome {
	out := make([]Outcome, len(phases))
	for i, p := range phases {
		out[i] = Outcome{At: t0.Add(time.Duration(i+1) * time.Minute), Phase: p, Reason: "measurement " + string(p)}
	}
	return out
}

func TestMetricProgram_Decide(t *testing.T) {
	t.Parallel()
	const S, F, I, E = PhaseSuccessful, PhaseFailed, PhaseInconclusive, PhaseError
	tests := []struct {
		name       string
		mutate     func(*Metric)
		policy     InconclusivePolicy
		outcomes   []Outcome
		now        time.Time
		wantPhase  RunPhase
		wantNext   time.Time
		wantReason string
	}{
		{
			name: "nothing measured yet", now: t0,
			wantPhase: RunMeasuring, wantNext: t0.Add(time.Minute), wantReason: "0 of 3 measurements taken",
		},
		{
			name: "measuring", outcomes: outcomesAt(S, S), now: t0.Add(2 * time.Minute),
			wantPhase: RunMeasuring, wantNext: t0.Add(3 * time.Minute), wantReason: "2 of 3 measurements taken; last: measurement Successful",
		},
		{
			name: "passed", outcomes: outcomesAt(S, S, S), now: t0.Add(3 * time.Minute),
			wantPhase: RunPassed, wantReason: "3 of 3 measurements successful",
		},
		{
			// Measurements taken early do not shorten the run.
			name:     "count reached before the duration",
			outcomes: []Outcome{{At: t0, Phase: S}, {At: t0, Phase: S}, {At: t0, Phase: S}}, now: t0.Add(time.Minute),
			wantPhase: RunMeasuring, wantNext: t0.Add(3 * time.Minute),
		},
		{
			name: "one failure over the limit", outcomes: outcomesAt(S, F), now: t0.Add(2 * time.Minute),
			wantPhase: RunFailed, wantReason: "1 of 2 measurements failed (failure limit 0): measurement Failed",
		},
		{
			name: "flapping within the limit", mutate: func(m *Metric) { m.FailureLimit = 1 },
			outcomes: outcomesAt(S, F, S), now: t0.Add(3 * time.Minute),
			wantPhase: RunPassed, wantReason: "2 of 3 measurements successful",
		},
		{
			name: "flapping over the limit", mutate: func(m *Metric) { m.FailureLimit = 1; m.Count = 5 },
			outcomes: outcomesAt(S, F, S, F), now: t0.Add(4 * time.Minute),
			wantPhase: RunFailed, wantReason: "2 of 4 measurements failed (failure limit 1)",
		},
		{
			name: "inconclusive within the limit", mutate: func(m *Metric) { m.InconclusiveLimit = 2 },
			outcomes: outcomesAt(S, I, E), now: t0.Add(3 * time.Minute),
			wantPhase: RunMeasuring, wantNext: t0.Add(4 * time.Minute), wantReason: "1 of 3 measurements taken; last: measurement Error",
		},
		{
			name: "inconclusive over the limit waits and says why", outcomes: outcomesAt(S, E), now: t0.Add(2 * time.Minute),
			wantPhase: RunInconclusive, wantNext: t0.Add(3 * time.Minute),
			wantReason: "waiting: 1 inconclusive measurement in a row since 2026-03-01T12:02:00Z; fails at 2026-03-01T12:32:00Z unless a measurement is conclusive: measurement Error",
		},
		{
			// Prometheus stopped mid-soak, then came back.
			name: "data returns", outcomes: outcomesAt(S, E, E, I, S, S), now: t0.Add(6 * time.Minute),
			wantPhase: RunPassed, wantReason: "3 of 3 measurements successful",
		},
		{
			name: "inconclusive timeout fails", outcomes: outcomesAt(S, E), now: t0.Add(32 * time.Minute),
			wantPhase: RunFailed, wantReason: "no conclusive measurement for 30m0s (timeout 30m0s): measurement Error",
		},
		{
			name: "inconclusive timeout asks for approval", policy: InconclusiveAskApproval, outcomes: outcomesAt(E), now: t0.Add(40 * time.Minute),
			wantPhase: RunAskApproval, wantReason: "no conclusive measurement for 39m0s",
		},
		{
			name: "waiting says it will ask", policy: InconclusiveAskApproval, outcomes: outcomesAt(I), now: t0.Add(2 * time.Minute),
			wantPhase: RunInconclusive, wantNext: t0.Add(2 * time.Minute), wantReason: "asks for approval at 2026-03-01T12:31:00Z",
		},
		{
			// Once passed, a later blip does not undo it.
			name: "passed before a later inconclusive", outcomes: outcomesAt(S, S, S, E), now: t0.Add(4 * time.Minute),
			wantPhase: RunPassed,
		},
		{
			name:     "only inconclusive never passes",
			outcomes: outcomesAt(I, I, I, I, I, I), now: t0.Add(6 * time.Minute),
			wantPhase: RunInconclusive, wantNext: t0.Add(7 * time.Minute),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := errorRate()
			if tt.mutate != nil {
				tt.mutate(&spec)
			}
			p, err := Compile(Analysis{Metrics: []Metric{spec}, OnInconclusiveTimeout: tt.policy})
			require.NoError(t, err)
			got := p.Metrics()[0].Decide(ReplayRun(t0, tt.outcomes), tt.now)
			require.Equal(t, tt.wantPhase, got.Phase, got.Reason)
			require.Equal(t, tt.wantNext, got.NextMeasurement)
			require.Contains(t, got.Reason, tt.wantReason)
			require.Equal(t, "error-rate", got.Metric)
			require.Equal(t, got.Phase == RunPassed || got.Phase == RunFailed || got.Phase == RunAskApproval, got.Finished())
		})
	}
}

func TestMetricProgram_Decide_perTarget(t *testing.T) {
	t.Parallel()
	spec := errorRate()
	spec.PerTarget = &PerTargetSpec{SeriesLabel: "cluster"}
	spec.FailureLimit = 1
	m := compileMetricT(t, spec)
	wave := targets("a", "b", "c")
	s := NewRunState(t0)
	for i, values := range []map[string]float64{
		{"a": 0, "b": 0.05, "c": 0},
		{"a": 0, "b": 0.07, "c": 0.02},
		{"a": 0, "b": 0.09, "c": 0},
	} {
		s.Record(m.Evaluate(Measurement{At: t0.Add(time.Duration(i+1) * time.Minute), Result: vector("cluster", values)}, wave))
	}
	got := m.Decide(s, t0.Add(3*time.Minute))
	// Failed targets do not fail the metric: the wave's threshold judges them.
	require.Equal(t, RunPassed, got.Phase, got.Reason)
	require.Equal(t, []TargetVerdict{{
		Target: "b",
		Reason: `metric error-rate failed 3 times (failure limit 1): result = 0.09: "result < 0.01" does not hold`,
	}}, got.FailedTargets)
	require.Equal(t, map[string]int{"b": 3, "c": 1}, s.TargetFailures)
	require.Nil(t, s.Last.Targets, "the run state keeps no per-target list")
	require.Contains(t, got.Reason, "1 target failed")
}

func TestRunState_Record(t *testing.T) {
	t.Parallel()
	s := ReplayRun(t0, outcomesAt(PhaseSuccessful, PhaseError, PhaseInconclusive, PhaseFailed, PhaseInconclusive))
	require.Equal(t, 1, s.Successful)
	require.Equal(t, 1, s.Failed)
	require.Equal(t, 2, s.Inconclusive)
	require.Equal(t, 1, s.Errors)
	require.Equal(t, 5, s.Measurements())
	require.Equal(t, 1, s.Streak)
	require.Equal(t, t0.Add(5*time.Minute), s.StreakSince)
	require.Equal(t, PhaseInconclusive, s.Last.Phase)
}

func TestAnalysis_Duration(t *testing.T) {
	t.Parallel()
	slow := errorRate()
	slow.Name, slow.Interval, slow.Count = "slow", 2*time.Minute, 10
	a := Analysis{Metrics: []Metric{errorRate(), slow, {Name: "defaults"}}}
	require.Equal(t, 20*time.Minute, a.Duration())
	require.Equal(t, 5*time.Minute, Metric{}.Duration())
	p, err := Compile(Analysis{Metrics: []Metric{errorRate(), slow}})
	require.NoError(t, err)
	require.Equal(t, 20*time.Minute, p.Duration())
	require.Equal(t, 3*time.Minute, p.Metrics()[0].Duration())
}
