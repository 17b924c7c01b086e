//go:build integration

package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestFleetStagePromQLRefused creates a FleetStage whose analysis queries
// Prometheus's parser refuses, in the FleetStage's metrics, a wave's
// override and a baseline query: the apiserver refuses it with every
// query's path and the parser's message, positioned in the query as
// written.
func TestFleetStagePromQLRefused(t *testing.T) {
	newProject(t, "promql")
	fleetWide := errorRatio()
	fleetWide.Query = `sum(rate(errors{cluster=~"{{targets.regex}}"}[5m])`
	override := errorRatio()
	override.Query = `sum(rat(errors{cluster=~"{{targets.regex}}"}[5m]))`
	baseline := errorRatio()
	baseline.Name, baseline.SuccessCondition = "vs-baseline", "result <= 1.2 * baseline"
	baseline.Baseline = &fleetv1alpha1.BaselineAnalysis{Query: `rate(errors{cluster=~"{{baseline.regex}}"})`}
	fs := testutil.MakeFleetStage("promql", "fleet").Waves(
		fleetv1alpha1.Wave{Name: "canary", Count: testutil.Int(1), Analysis: &fleetv1alpha1.WaveAnalysis{
			Metrics: []fleetv1alpha1.AnalysisMetric{override, baseline}}},
		fleetv1alpha1.Wave{Name: "rest"},
	).Obj()
	fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
		Metrics: []fleetv1alpha1.AnalysisMetric{fleetWide}}

	err := env.Client.Create(context.Background(), fs)
	require.Error(t, err, "the apiserver must refuse invalid PromQL")
	t.Logf("a user sees: %v", err)
	require.ErrorContains(t, err, `spec.analysis.metrics[0].query: Invalid value: `+
		`"sum(rate(errors{cluster=~\"{{targets.regex}}\"}[5m])": invalid PromQL: 1:51: parse error: unclosed left parenthesis`)
	require.ErrorContains(t, err, `spec.waves[0].analysis.metrics[0].query: Invalid value: `+
		`"sum(rat(errors{cluster=~\"{{targets.regex}}\"}[5m]))": invalid PromQL: 1:5: parse error: unknown function with name "rat"`)
	require.ErrorContains(t, err, `spec.waves[0].analysis.metrics[1].baseline.query: Invalid value: `+
		`"rate(errors{cluster=~\"{{baseline.regex}}\"})": invalid PromQL: 1:6: parse error: `+
		`expected type range vector in call to function "rate", got instant vector`)

	fleetWide.Query = `sum(rate(errors{cluster=~"{{targets.regex}}"}[5m]))`
	override.Query = `sum(rate(errors{cluster=~"{{targets.regex}}"}[5m]))`
	baseline.Baseline.Query = `rate(errors{cluster=~"{{baseline.regex}}"}[1m])`
	fs.Spec.Analysis.Metrics = []fleetv1alpha1.AnalysisMetric{fleetWide}
	fs.Spec.Waves[0].Analysis.Metrics = []fleetv1alpha1.AnalysisMetric{override, baseline}
	require.NoError(t, env.Client.Create(context.Background(), fs), "the corrected queries are accepted")
}
