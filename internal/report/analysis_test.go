package report

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// analysedFleet is a fleet whose waves run two metrics, and whose canary
// wave overrides them with a stricter one.
func analysedFleet() *fleetv1alpha1.FleetStage {
	fs := withRollouts(fleetStage(), "prod-1a2b3c4d5e", "")
	count := int32(4)
	fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
		Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
		Metrics: []fleetv1alpha1.AnalysisMetric{
			{Name: "error-ratio", Query: `sum(rate(errors{cluster=~"{{targets.regex}}"}[1m]))`, SuccessCondition: "result < 0.01"},
			{Name: "latency", Query: `avg(latency{cluster=~"{{targets.regex}}"})`, Count: &count,
				SuccessCondition: "result <= 1.2 * baseline", Baseline: &fleetv1alpha1.BaselineAnalysis{}},
		},
	}
	fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "pilot", Analysis: &fleetv1alpha1.WaveAnalysis{
		Metrics: []fleetv1alpha1.AnalysisMetric{{Name: "error-ratio", Query: `x{c=~"{{targets.regex}}"}`,
			SuccessCondition: "result == 0"}},
	}}}
	return fs
}

// analysing is a rollout whose pilot wave passed its analysis and whose
// canary wave's analysis waits on a metric without data.
func analysing() fleetv1alpha1.FleetRollout {
	ro := forwardWaiting()
	ro.Status.Phase = fleetv1alpha1.RolloutProgressing
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2, Analysis: &fleetv1alpha1.WaveAnalysisStatus{
			Phase: fleetv1alpha1.AnalysisPassed, StartedAt: *at(10 * time.Second),
			Metrics: []fleetv1alpha1.MetricRun{{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisPassed, Successful: 5,
				Last: &fleetv1alpha1.MeasurementRecord{At: *at(15 * time.Second), Phase: "Successful", Value: "0"}}},
		}},
		{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 20, Succeeded: 20,
			Waiting: "analysis inconclusive: latency: no data",
			Analysis: &fleetv1alpha1.WaveAnalysisStatus{
				Phase: fleetv1alpha1.AnalysisInconclusive, StartedAt: *at(20 * time.Second), NextMeasurementAt: at(2 * time.Minute),
				Metrics: []fleetv1alpha1.MetricRun{
					{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisMeasuring, Successful: 2, Failed: 1,
						Last: &fleetv1alpha1.MeasurementRecord{At: *at(80 * time.Second), Phase: "Successful", Value: "0.0012"}},
					{Name: "latency", Phase: fleetv1alpha1.AnalysisInconclusive, Inconclusive: 2, Errors: 1,
						Reason: "no data: the query returned an empty result",
						Last:   &fleetv1alpha1.MeasurementRecord{At: *at(80 * time.Second), Phase: "Inconclusive"}},
					{Name: "renamed", Phase: fleetv1alpha1.AnalysisFailed, Failed: 1, Reason: "result = 3 fails result < 1"},
				},
			}},
		{Name: "general", Phase: fleetv1alpha1.WavePending, Total: 158, Pending: 158},
	}
	return ro
}

func TestRenderText_analysis(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := Build(Input{FleetStage: analysedFleet(), Rollouts: []fleetv1alpha1.FleetRollout{analysing()}})
	require.NoError(t, RenderText(&buf, r, TextOptions{Now: t0.Add(95 * time.Second), ASCII: true, Width: 80, NoLegend: true}))
	golden(t, "analysis-80-columns.golden", buf.Bytes())
}

func TestBuild_analyses(t *testing.T) {
	t.Parallel()
	r := Build(Input{FleetStage: analysedFleet(), Rollouts: []fleetv1alpha1.FleetRollout{analysing()}})
	require.Len(t, r.Rollouts, 1)
	got := r.Rollouts[0].Analyses
	require.Len(t, got, 2, "the waves whose analysis started, and no other")
	require.Equal(t, "pilot", got[0].Wave)
	require.Equal(t, "result == 0", got[0].Metrics[0].Condition, "the wave's own analysis overrides the fleet's")
	require.Equal(t, 5, got[0].Metrics[0].Count, "the default count")
	canary := got[1]
	require.Equal(t, fleetv1alpha1.AnalysisInconclusive, canary.Phase)
	require.Equal(t, []string{"error-ratio", "latency", "renamed"},
		[]string{canary.Metrics[0].Name, canary.Metrics[1].Name, canary.Metrics[2].Name})
	require.Equal(t, "result <= 1.2 * baseline", canary.Metrics[1].Condition)
	require.Equal(t, 4, canary.Metrics[1].Count)
	require.Empty(t, canary.Metrics[2].Condition, "a metric the spec no longer has has no condition")

	var buf bytes.Buffer
	require.NoError(t, RenderJSON(&buf, r))
	var decoded struct {
		Rollouts []struct {
			Analyses []WaveAnalysis `json:"analyses"`
		} `json:"rollouts"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &decoded))
	m := decoded.Rollouts[0].Analyses[1].Metrics[0]
	require.NotNil(t, m.Last)
	require.True(t, m.Last.At.Equal(at(80*time.Second)), "last measured at %s", m.Last.At)
	require.Equal(t, "0.0012", m.Last.Value)
	m.Last = nil
	require.Equal(t, MetricAnalysis{Name: "error-ratio", Condition: "result < 0.01", Count: 5,
		Phase: fleetv1alpha1.AnalysisMeasuring, Successful: 2, Failed: 1}, m)
}
