package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestProgram_Decide(t *testing.T) {
	t.Parallel()
	const S, F, E = PhaseSuccessful, PhaseFailed, PhaseError
	latency := errorRate()
	latency.Name = "p99-latency"
	latency.SuccessCondition = "result < 0.5"
	perTarget := errorRate()
	perTarget.Name = "per-cluster"
	perTarget.PerTarget = &PerTargetSpec{SeriesLabel: "cluster"}
	failedTarget := Outcome{At: t0.Add(time.Minute), Phase: F, Reason: "1 of 1 targets failed",
		Targets: []TargetOutcome{{Target: "b", Phase: F, Reason: "result = 0.2"}}}
	tests := []struct {
		name       string
		policy     InconclusivePolicy
		runs       [][]Outcome
		now        time.Time
		wantPhase  RunPhase
		wantNext   time.Time
		wantReason string
		wantFailed []string
	}{
		{
			name: "all passed", runs: [][]Outcome{outcomesAt(S, S, S), outcomesAt(S, S, S), outcomesAt(S, S, S)}, now: t0.Add(3 * time.Minute),
			wantPhase: RunPassed, wantReason: "all 3 metrics passed",
		},
		{
			name: "one still measuring", runs: [][]Outcome{outcomesAt(S, S, S), outcomesAt(S, S), outcomesAt(S, S, S)}, now: t0.Add(3 * time.Minute),
			wantPhase: RunMeasuring, wantNext: t0.Add(3 * time.Minute), wantReason: "1 of 3 metrics is measuring: p99-latency: 2 of 3 measurements taken",
		},
		{
			name: "one failed beats the others", runs: [][]Outcome{outcomesAt(S, F), outcomesAt(E), outcomesAt(S)}, now: t0.Add(2 * time.Minute),
			wantPhase: RunFailed, wantReason: "1 of 3 metrics failed: error-rate: 1 of 2 measurements failed",
		},
		{
			name: "inconclusive waits", runs: [][]Outcome{outcomesAt(S, S), outcomesAt(S, E), outcomesAt(S, S)}, now: t0.Add(2 * time.Minute),
			wantPhase: RunInconclusive, wantNext: t0.Add(3 * time.Minute), wantReason: "1 of 3 metrics is inconclusive: p99-latency: waiting",
		},
		{
			name: "ask for approval", policy: InconclusiveAskApproval, runs: [][]Outcome{outcomesAt(S, S, S), outcomesAt(E), outcomesAt(S, S, S)}, now: t0.Add(time.Hour),
			wantPhase: RunAskApproval, wantReason: "1 of 3 metrics asks for approval: p99-latency: no conclusive measurement",
		},
		{
			name: "failed targets of a passed analysis", runs: [][]Outcome{outcomesAt(S, S, S), outcomesAt(S, S, S), {failedTarget, {At: t0.Add(2 * time.Minute), Phase: S}, {At: t0.Add(3 * time.Minute), Phase: S}}},
			now: t0.Add(3 * time.Minute), wantPhase: RunPassed, wantReason: "all 3 metrics passed; 1 target failed their own metric", wantFailed: []string{"b"},
		},
		{
			name: "no measurement yet", runs: nil, now: t0,
			wantPhase: RunMeasuring, wantNext: t0.Add(time.Minute),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Compile(Analysis{Metrics: []Metric{errorRate(), latency, perTarget}, OnInconclusiveTimeout: tt.policy})
			require.NoError(t, err)
			states := make([]RunState, 3)
			for i := range states {
				states[i] = NewRunState(t0)
				if i < len(tt.runs) {
					states[i] = ReplayRun(t0, tt.runs[i])
				}
			}
			got := p.Decide(states, tt.now)
			require.Equal(t, tt.wantPhase, got.Phase, got.Reason)
			require.Equal(t, tt.wantNext, got.NextMeasurement)
			require.Contains(t, got.Reason, tt.wantReason)
			require.Len(t, got.Metrics, 3)
			var failed []string
			for _, v := range got.FailedTargets {
				failed = append(failed, v.Target)
			}
			require.Equal(t, tt.wantFailed, failed)
		})
	}
}
