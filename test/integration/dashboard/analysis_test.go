//go:build integration

package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// Error ratios of the targets' services, as the Kargo simulator's service
// metrics count their requests: the targets running the new Freight fail
// more requests than the rest of the fleet.
const (
	waveErrorRatio     = 0.02
	baselineErrorRatio = 0.004
)

// projectReader lists in one Project only.
type projectReader struct {
	client.Reader
	ns string
}

// List implements client.Reader.
func (r projectReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.InNamespace(r.ns))...)
}

// TestDashboard_waveAnalysis opens the analysis page of a canary wave that
// measures its error ratio in a real Prometheus: the plot draws the wave's
// targets and the baseline as two lines from Prometheus's samples, the
// wave's above the baseline's, with the success condition and the last
// measurement.
func TestDashboard_waveAnalysis(t *testing.T) {
	const ns = "analysis"
	bg := context.Background()
	require.NoError(t, env.Client.Create(bg, envtest.ProjectNamespace(ns)))
	fleet := dashtest.NewFleetIn(ns, 40, time.Now())
	require.NoError(t, fleet.Create(bg, env.Client))

	// The fixture's target Stages do not move: only the service metrics of
	// the Kargo simulator count their requests, by the Freight each runs.
	metrics, err := kargosim.ServeServiceMetrics(t.Context(), projectReader{Reader: env.Client, ns: ns},
		kargosim.ServiceMetrics{ErrorRatios: map[string]float64{fleet.Bad: waveErrorRatio}, DefaultErrorRatio: baselineErrorRatio})
	require.NoError(t, err)
	prom := promtest.StartWith(t, promtest.Options{MetricsPath: kargosim.ServiceMetricsPath}, metrics)
	started := time.Now()

	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(bg, client.ObjectKey{Namespace: ns, Name: dashtest.FleetStage}, fs))
	fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
		Prometheus: fleetv1alpha1.PrometheusSource{Address: prom.URL()},
		Metrics: []fleetv1alpha1.AnalysisMetric{{Name: "error-ratio",
			Query: `sum(rate(kargo_simulator_http_requests_total{code="500", cluster=~"{{targets.regex}}"}[3s]))
/ sum(rate(kargo_simulator_http_requests_total{cluster=~"{{targets.regex}}"}[3s]))`,
			SuccessCondition: "result <= 1.5 * baseline", Baseline: &fleetv1alpha1.BaselineAnalysis{}}},
	}
	require.NoError(t, env.Client.Update(bg, fs))

	// Let Prometheus scrape for a while, then record the analysis the
	// controller would have written.
	time.Sleep(8 * time.Second)
	ro := &fleetv1alpha1.FleetRollout{}
	require.NoError(t, env.Client.Get(bg, client.ObjectKey{Namespace: ns, Name: dashtest.Rollout}, ro))
	last := metav1.NewTime(time.Now().Add(-time.Second))
	next := metav1.NewTime(time.Now().Add(time.Minute))
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == "canary" {
			ro.Status.Waves[i].Analysis = &fleetv1alpha1.WaveAnalysisStatus{Phase: fleetv1alpha1.AnalysisMeasuring,
				StartedAt: metav1.NewTime(started), NextMeasurementAt: &next,
				Metrics: []fleetv1alpha1.MetricRun{{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisFailed, Successful: 1, Failed: 1,
					Reason: "result = 0.012 fails result <= 1.5 * baseline (baseline = 0.004, p = 0.001)",
					Last: &fleetv1alpha1.MeasurementRecord{At: last, Phase: "Failed", Value: "0.012",
						Reason: "result = 0.012 fails result <= 1.5 * baseline"}}}}
		}
	}
	require.NoError(t, env.Client.Status().Update(bg, ro))

	base := serve(t, dashboard.Options{Config: env.Config, Namespaces: []string{ns}, Clock: clock.RealClock{}})
	ctx := browser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/projects/"+ns+"/fleetstages/"+dashtest.FleetStage)))
	waitTrue(t, ctx, 20*time.Second, `!!document.querySelector('tr.wave[data-wave="canary"] a.analysis-link')`)
	require.Equal(t, "analysis Measuring", text(t, ctx, `tr.wave[data-wave="canary"] a.analysis-link`))
	require.Zero(t, count(t, ctx, `tr.wave[data-wave="pilot"] a.analysis-link`), "a wave without analysis has no link")

	click(t, ctx, `tr.wave[data-wave="canary"] a.analysis-link`)
	waitTrue(t, ctx, 20*time.Second, `!!document.querySelector('section.metric[data-metric="error-ratio"] svg.chart')`)
	metric := `section.metric[data-metric="error-ratio"]`
	require.Contains(t, text(t, ctx, metric+" .cond"), "result <= 1.5 * baseline")
	require.Contains(t, text(t, ctx, metric), "1 successful · 1 failed · 0 inconclusive")
	require.Zero(t, count(t, ctx, metric+" .problem"), "every query answered")
	require.Equal(t, 1, count(t, ctx, metric+" svg polyline.series.wave"))
	require.Equal(t, 1, count(t, ctx, metric+" svg polyline.series.baseline"))
	require.Equal(t, 1, count(t, ctx, metric+" svg circle.marker.Failed"))

	// Both lines hold several of Prometheus's samples, and the wave's (the
	// requests of two canary targets failing 2 % and two failed ones still
	// failing 0.4 %: 1.2 %) is drawn above the baseline's, at 0.4 % (a
	// smaller y is higher).
	heights, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`['wave', 'baseline'].map(c => {
	  const pts = document.querySelector('section.metric[data-metric="error-ratio"] polyline.series.' + c).points;
	  if (pts.length < 3) return -1;
	  let sum = 0; for (let i = 0; i < pts.length; i++) sum += pts.getItem(i).y;
	  return sum / pts.length; })`))
	require.NoError(t, err)
	require.Len(t, heights, 2)
	require.Positive(t, heights[0], "the wave's line has at least 3 samples")
	require.Positive(t, heights[1], "the baseline's line has at least 3 samples")
	require.Less(t, heights[0], heights[1], "the wave's error ratio is drawn above the baseline's")
	requireNoCSPViolations(t, ctx)

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	screenshot(t, "dashboard-analysis.png", png)
}
