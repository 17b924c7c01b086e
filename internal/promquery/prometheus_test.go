package promquery

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// weirdCluster is a cluster id that tries to leave its string and widen
// the regex it is substituted into.
const weirdCluster = `weird"}|.*`

// TestRealPrometheus runs the analysis against a real Prometheus server
// (its query engine and HTTP API) scraping a test exporter whose error
// ratio per cluster follows the Freight the cluster runs.
func TestRealPrometheus(t *testing.T) {
	clusters := []string{"prod-eu-1", "prod-us-2", "canary-1", "a.b", "axb", weirdCluster}
	exporter, exporterAddress := startExporter(t, clusters...)
	exporter.promote("canary-1", badFreight)
	prom := promtest.Start(t, exporterAddress)
	client, err := New(Config{URL: prom.URL(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	// Enough samples for a range of three seconds on every cluster.
	waitFor(t, prom, client, `count_over_time(kargo_fleet_test_error_ratio[1m])`, func(series int, values []float64) bool {
		return series == len(clusters) && slices.Min(values) >= 5
	})
	ctx := context.Background()

	t.Run("a vector per target judges each target", func(t *testing.T) {
		m := compileMetric(t, analysis.Metric{
			Name:             "per-cluster-errors",
			Query:            `max by (cluster) (kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"})`,
			SuccessCondition: "result < 0.01",
			PerTarget:        &analysis.PerTargetSpec{SeriesLabel: "cluster"},
		})
		wave := waveOf("canary-1", "prod-eu-1", "prod-us-2")
		out := measure(t, client, m, analysis.TargetSets{Targets: wave}, wave)
		require.Equal(t, analysis.PhaseFailed, out.Phase, out.Reason)
		require.Len(t, out.Targets, 3)
		require.Equal(t, analysis.TargetOutcome{Target: "canary-1", Phase: analysis.PhaseFailed, HasValue: true, Value: badRatio,
			Reason: `result = 0.05: "result < 0.01" does not hold`}, out.Targets[0])
		require.Equal(t, analysis.PhaseSuccessful, out.Targets[1].Phase)
		require.Equal(t, analysis.PhaseSuccessful, out.Targets[2].Phase)
	})

	t.Run("target ids cannot inject into the query", func(t *testing.T) {
		// Ids no series has: each must parse in Prometheus and match nothing.
		hostile := []string{"new\nline", `back\slash`, "tab\t", "del\x7f", "\ufffd", "quote'single", "`raw`",
			"# comment", "zürich-東京", `\"`, "}}", "{{targets.regex}}", ".*", "|", "a.b|axb"}
		for _, query := range []string{
			`kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"}`,
			`kargo_fleet_test_error_ratio{cluster=~'{{targets.regex}}'}`,
		} {
			tmpl, err := analysis.ParseTemplate(query)
			require.NoError(t, err)
			rendered, err := tmpl.Render(analysis.TargetSets{Targets: waveOf(append([]string{weirdCluster, "a.b"}, hostile...)...)})
			require.NoError(t, err)
			v, err := client.Instant(ctx, rendered, time.Now())
			require.NoError(t, err, "Prometheus refused %s", rendered)
			var got []string
			for _, s := range v.Series {
				got = append(got, s.Labels["cluster"])
			}
			slices.Sort(got)
			require.Equal(t, []string{"a.b", weirdCluster}, got, "query %s", rendered)
		}
	})

	t.Run("an empty result is inconclusive", func(t *testing.T) {
		m := compileMetric(t, analysis.Metric{
			Name:             "errors",
			Query:            `max(kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"})`,
			SuccessCondition: "result < 0.01",
		})
		out := measure(t, client, m, analysis.TargetSets{Targets: waveOf("not-scraped")}, nil)
		require.Equal(t, analysis.PhaseInconclusive, out.Phase, out.Reason)
		require.Equal(t, "no data: the query returned an empty result", out.Reason)
	})

	t.Run("several series where one was expected", func(t *testing.T) {
		m := compileMetric(t, analysis.Metric{
			Name:             "errors",
			Query:            `kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"}`,
			SuccessCondition: "result < 0.01",
		})
		out := measure(t, client, m, analysis.TargetSets{Targets: waveOf("prod-eu-1", "prod-us-2")}, nil)
		require.Equal(t, analysis.PhaseError, out.Phase, out.Reason)
		require.Contains(t, out.Reason, "the query returned 2 series where one was expected")
	})

	t.Run("a bad query carries Prometheus's message", func(t *testing.T) {
		m := compileMetric(t, analysis.Metric{
			Name:             "errors",
			Query:            `sum(rate(kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"}[1m])`,
			SuccessCondition: "result < 0.01",
		})
		out := measure(t, client, m, analysis.TargetSets{Targets: waveOf("prod-eu-1")}, nil)
		require.Equal(t, analysis.PhaseError, out.Phase, out.Reason)
		require.Contains(t, out.Reason, "Prometheus refused the query: the query of the wave's targets: ")
		require.Contains(t, out.Reason, "parse error")
	})

	t.Run("a bad Freight is worse than the baseline, a good one is not", func(t *testing.T) {
		m := compileMetric(t, analysis.Metric{
			Name:             "errors-vs-baseline",
			Query:            `kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"}`,
			Interval:         3 * time.Second,
			SuccessCondition: "result <= 1.2 * baseline",
			Baseline:         &analysis.BaselineSpec{Step: time.Second},
		})
		baseline := waveOf("prod-us-2", "a.b", "axb")
		bad := measure(t, client, m, analysis.TargetSets{Targets: waveOf("canary-1"), Baseline: baseline}, nil)
		require.Equal(t, analysis.PhaseFailed, bad.Phase, bad.Reason)
		require.Contains(t, bad.Reason, "wave 0.05 vs baseline 0.001")
		require.True(t, bad.Comparison.Significant)
		require.GreaterOrEqual(t, bad.Comparison.WaveSamples, 3)

		good := measure(t, client, m, analysis.TargetSets{Targets: waveOf("prod-eu-1"), Baseline: baseline}, nil)
		require.Equal(t, analysis.PhaseSuccessful, good.Phase, good.Reason)
	})

	m := compileMetric(t, analysis.Metric{
		Name:             "errors",
		Query:            `max(kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"})`,
		SuccessCondition: "result < 0.01",
	})
	t.Run("Prometheus stopped makes the measurement an error", func(t *testing.T) {
		prom.Stop()
		out := measure(t, client, m, analysis.TargetSets{Targets: waveOf("prod-eu-1")}, nil)
		require.Equal(t, analysis.PhaseError, out.Phase, out.Reason)
		require.Contains(t, out.Reason, "Prometheus is unavailable: the query of the wave's targets: Prometheus is unreachable")
	})

	t.Run("Prometheus restarted answers again", func(t *testing.T) {
		prom.Start()
		waitFor(t, prom, client, `kargo_fleet_test_error_ratio{cluster="prod-eu-1"}`, func(series int, _ []float64) bool { return series == 1 })
		out := measure(t, client, m, analysis.TargetSets{Targets: waveOf("prod-eu-1")}, nil)
		require.Equal(t, analysis.PhaseSuccessful, out.Phase, out.Reason)
	})
}

// compileMetric compiles a one-metric analysis.
func compileMetric(t *testing.T, m analysis.Metric) *analysis.MetricProgram {
	t.Helper()
	p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{m}})
	require.NoError(t, err)
	return p.Metrics()[0]
}

// waveOf builds targets with the given ids.
func waveOf(ids ...string) []analysis.Target {
	out := make([]analysis.Target, len(ids))
	for i, id := range ids {
		out[i] = analysis.Target{ID: id}
	}
	return out
}

// measure renders m for sets, takes a measurement now and evaluates it.
func measure(t *testing.T, c *Client, m *analysis.MetricProgram, sets analysis.TargetSets, wave []analysis.Target) analysis.Outcome {
	t.Helper()
	q, err := m.Render(sets)
	require.NoError(t, err)
	return m.Evaluate(c.Measure(context.Background(), m, q, time.Now()), wave)
}
