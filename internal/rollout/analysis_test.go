package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
)

// canaryAnalysis is an analysis of one metric, measured every minute,
// three times; failureLimit 0. perTarget makes it judge each target.
func canaryAnalysis(t *testing.T, onTimeout analysis.InconclusivePolicy, perTarget bool) *analysis.Program {
	t.Helper()
	m := analysis.Metric{Name: "errors", Query: `max(e{cluster=~"{{targets.regex}}"})`, Interval: time.Minute, Count: 3,
		SuccessCondition: "result < 0.01"}
	if perTarget {
		m.Query = `max by (cluster) (e{cluster=~"{{targets.regex}}"})`
		m.PerTarget = &analysis.PerTargetSpec{SeriesLabel: "cluster"}
	}
	p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{m}, InconclusiveTimeout: 10 * time.Minute,
		OnInconclusiveTimeout: onTimeout})
	require.NoError(t, err)
	return p
}

// analysed gives the canary wave the analysis p with the outcomes recorded
// since started (nil outcomes: not started).
func analysed(p *analysis.Program, started time.Time, outcomes []analysis.Outcome) obsOption {
	return func(o *Observation) {
		wa := &WaveAnalysis{Program: p}
		if started.IsZero() {
			o.Analyses = map[string]*WaveAnalysis{"canary": wa}
			return
		}
		wa.States = []analysis.RunState{analysis.ReplayRun(started, outcomes)}
		o.Analyses = map[string]*WaveAnalysis{"canary": wa}
		// The status the previous decision recorded, as the reconciler reads it back.
		st := fleetspec.Status(p, started, []analysis.RunState{analysis.NewRunState(started)}, p.Decide(nil, started))
		o.Rollout.Status.Waves = []fleetv1alpha1.WaveProgress{
			{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded},
			{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Analysis: st},
		}
	}
}

func outcome(at time.Time, phase analysis.Phase, value float64, targets ...analysis.TargetOutcome) analysis.Outcome {
	return analysis.Outcome{At: at, Phase: phase, HasValue: true, Value: value, Reason: "result = " + fleetspec.FormatValue(value),
		Targets: targets}
}

func TestDecide_waveAnalysis(t *testing.T) {
	t.Parallel()
	canaryDone := []obsOption{requested("pilot", "canary"), succeeded("pilot-00", "canary-00", "canary-01", "canary-02", "canary-03")}
	started := now.Add(-3 * time.Minute)
	tests := []struct {
		name       string
		opts       []obsOption
		assertions func(t *testing.T, d Decision)
	}{
		{
			name: "targets done: the analysis starts and the wave waits for it",
			opts: []obsOption{analysed(canaryAnalysis(t, "", false), time.Time{}, nil)},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.RolloutProgressing, d.Phase)
				require.Equal(t, fleetv1alpha1.WaveProgressing, d.Waves[1].Phase)
				require.NotNil(t, d.Waves[1].Analysis)
				require.Equal(t, now, d.Waves[1].Analysis.StartedAt.Time)
				require.Equal(t, fleetv1alpha1.AnalysisMeasuring, d.Waves[1].Analysis.Phase)
				require.Equal(t, now.Add(time.Minute), d.RequeueAt, "the first measurement is one interval later")
				require.Contains(t, d.Message, "wave canary: analysis measuring: ")
				require.Empty(t, d.PromoteWave, "the next wave waits")
			},
		},
		{
			name: "every measurement successful: the wave passes",
			opts: []obsOption{analysed(canaryAnalysis(t, "", false), started, []analysis.Outcome{
				outcome(started.Add(time.Minute), analysis.PhaseSuccessful, 0.001),
				outcome(started.Add(2*time.Minute), analysis.PhaseSuccessful, 0.001),
				outcome(started.Add(3*time.Minute), analysis.PhaseSuccessful, 0.002),
			})},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.WaveSucceeded, d.Waves[1].Phase)
				require.Equal(t, fleetv1alpha1.AnalysisPassed, d.Waves[1].Analysis.Phase)
				require.Equal(t, "0.002", d.Waves[1].Analysis.Metrics[0].Last.Value)
			},
		},
		{
			name: "a failed measurement fails the wave like a breach",
			opts: []obsOption{analysed(canaryAnalysis(t, "", false), started, []analysis.Outcome{
				outcome(started.Add(time.Minute), analysis.PhaseFailed, 0.05),
			})},
			assertions: func(t *testing.T, d Decision) {
				require.NotNil(t, d.Breach)
				require.Equal(t, HaltAnalysisFailed, d.Breach.Reason)
				require.Contains(t, d.Breach.Message, "wave canary: analysis failed: 1 of 1 metric failed: errors: ")
				require.Contains(t, d.Breach.Message, "result = 0.05")
				require.Equal(t, fleetv1alpha1.RolloutFailed, d.Phase)
				require.Equal(t, fleetv1alpha1.WaveFailed, d.Waves[1].Phase)
				require.NotNil(t, d.Waves[1].FinishedAt, "the failed wave records when it finished")
				require.Equal(t, now, d.Waves[1].FinishedAt.Time)
				require.Equal(t, fleetv1alpha1.AnalysisFailed, d.Waves[1].Analysis.Phase)
			},
		},
		{
			name: "inconclusive: the wave waits and says why",
			opts: []obsOption{analysed(canaryAnalysis(t, "", false), started, []analysis.Outcome{
				{At: started.Add(time.Minute), Phase: analysis.PhaseError, Reason: "Prometheus is unavailable: connection refused"},
			})},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.RolloutProgressing, d.Phase)
				require.Equal(t, fleetv1alpha1.AnalysisInconclusive, d.Waves[1].Analysis.Phase)
				require.Contains(t, d.Waves[1].Waiting, "analysis inconclusive: ")
				require.Contains(t, d.Waves[1].Waiting, "connection refused")
				require.Nil(t, d.Breach)
			},
		},
		{
			name: "inconclusive past the timeout with AskApproval waits for kargo approve",
			opts: []obsOption{analysed(canaryAnalysis(t, analysis.InconclusiveAskApproval, false), now.Add(-20*time.Minute), []analysis.Outcome{
				{At: now.Add(-19 * time.Minute), Phase: analysis.PhaseInconclusive, Reason: "no data"},
			})},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.RolloutWaitingForApproval, d.Phase)
				require.Equal(t, fleetv1alpha1.WaveWaitingForApproval, d.Waves[1].Phase)
				require.Contains(t, d.Message, "kargo approve --project shop --freight f2 --stage prod-canary")
			},
		},
		{
			name: "a long reason is shortened to fit status.waves[].waiting, which the CRD bounds",
			opts: []obsOption{analysed(canaryAnalysis(t, "", false), started, []analysis.Outcome{
				{At: started.Add(time.Minute), Phase: analysis.PhaseError, Reason: "Prometheus is unavailable: " + strings.Repeat("x", 2000)},
			})},
			assertions: func(t *testing.T, d Decision) {
				require.LessOrEqual(t, len(d.Waves[1].Waiting), 512)
				require.Contains(t, d.Waves[1].Waiting, "analysis inconclusive: ")
				require.True(t, strings.HasSuffix(d.Waves[1].Waiting, "..."), d.Waves[1].Waiting)
			},
		},
		{
			name: "asking for approval with a long reason keeps the whole command",
			opts: []obsOption{analysed(canaryAnalysis(t, analysis.InconclusiveAskApproval, false), now.Add(-20*time.Minute), []analysis.Outcome{
				{At: now.Add(-19 * time.Minute), Phase: analysis.PhaseInconclusive, Reason: strings.Repeat("no data ", 300)},
			})},
			assertions: func(t *testing.T, d Decision) {
				require.LessOrEqual(t, len(d.Waves[1].Waiting), 512)
				require.True(t, strings.HasSuffix(d.Waves[1].Waiting, "kargo approve --project shop --freight f2 --stage prod-canary"),
					d.Waves[1].Waiting)
			},
		},
		{
			name: "approved after the analysis asked: the wave passes",
			opts: []obsOption{
				analysed(canaryAnalysis(t, analysis.InconclusiveAskApproval, false), now.Add(-20*time.Minute), []analysis.Outcome{
					{At: now.Add(-19 * time.Minute), Phase: analysis.PhaseInconclusive, Reason: "no data"},
				}),
				func(o *Observation) { o.ApprovedAt = map[string]time.Time{"canary": now.Add(-time.Minute)} },
			},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.WaveSucceeded, d.Waves[1].Phase)
				require.Contains(t, d.Waves[1].Analysis.Message, "approved for wave Stage prod-canary")
			},
		},
		{
			name: "an approval older than the analysis does not let it pass",
			opts: []obsOption{
				analysed(canaryAnalysis(t, analysis.InconclusiveAskApproval, false), now.Add(-20*time.Minute), []analysis.Outcome{
					{At: now.Add(-19 * time.Minute), Phase: analysis.PhaseInconclusive, Reason: "no data"},
				}),
				func(o *Observation) { o.ApprovedAt = map[string]time.Time{"canary": now.Add(-time.Hour)} },
			},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, fleetv1alpha1.WaveWaitingForApproval, d.Waves[1].Phase)
			},
		},
		{
			name: "targets failing their own metric count toward the wave's threshold",
			opts: []obsOption{analysed(canaryAnalysis(t, "", true), started, []analysis.Outcome{
				outcome(started.Add(time.Minute), analysis.PhaseFailed, 0.05,
					analysis.TargetOutcome{Target: "canary-00", Phase: analysis.PhaseFailed, HasValue: true, Value: 0.05, Reason: "result = 0.05"},
					analysis.TargetOutcome{Target: "canary-01", Phase: analysis.PhaseFailed, HasValue: true, Value: 0.07, Reason: "result = 0.07"},
				),
			})},
			assertions: func(t *testing.T, d Decision) {
				// canary allows one failure: two fail.
				require.NotNil(t, d.Breach)
				require.Equal(t, "WaveThresholdBreached", string(d.Breach.Reason))
				require.EqualValues(t, 2, d.Waves[1].Failed)
				require.Equal(t, ReasonAnalysisFailed, d.Failures[0].Reason)
				require.Contains(t, d.Failures[0].Examples[0].Reason, "metric errors failed 1 times")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := observe(fleet(), append(canaryDone, tt.opts...)...)
			tt.assertions(t, Decide(o))
		})
	}
}

func TestAnalysisTargets(t *testing.T) {
	t.Parallel()
	o := observe(fleet(), succeeded("pilot-00", "canary-00"))
	sets := AnalysisTargets(&o, "canary")
	require.Len(t, sets.Targets, 4)
	require.Equal(t, "canary-00", sets.Targets[0].ID)
	require.Equal(t, map[string]string{"region": "0"}, sets.Targets[0].Labels)
	require.Len(t, sets.Baseline, 10, "the general targets, not yet on the Freight; the pilot runs it")
}

func TestDueMetrics(t *testing.T) {
	t.Parallel()
	p := canaryAnalysis(t, "", false)
	started := now.Add(-90 * time.Second)
	wa := &WaveAnalysis{Program: p, States: []analysis.RunState{analysis.NewRunState(started)}}
	require.Equal(t, []int{0}, DueMetrics(wa, now))
	wa.States[0].Record(outcome(now.Add(-30*time.Second), analysis.PhaseSuccessful, 0))
	require.Empty(t, DueMetrics(wa, now), "the next one is due an interval after the last")
	require.Empty(t, DueMetrics(&WaveAnalysis{Program: p}, now), "not started")
}
