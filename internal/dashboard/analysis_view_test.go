package dashboard

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/promquery"
)

// analysedInput is the fixture fleet with a baseline metric and a plain
// one, whose canary wave's analysis started five minutes before now.
func analysedInput(t *testing.T, running bool) FleetInput {
	t.Helper()
	in := fleetInput(dashtest.NewFleet(40, now), "")
	fs := in.FleetStage.DeepCopy()
	fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
		Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
		Metrics: []fleetv1alpha1.AnalysisMetric{
			{Name: "error-ratio", Query: `avg(errors{cluster=~"{{targets.regex}}"})`, SuccessCondition: "result <= 1.5 * baseline",
				Baseline: &fleetv1alpha1.BaselineAnalysis{}},
			{Name: "latency", Query: `max(latency{cluster=~"{{targets.regex}}"})`, SuccessCondition: "result < 0.5"},
		},
	}
	in.FleetStage = fs
	ro := &in.Rollouts[0]
	last := metav1.NewTime(now.Add(-time.Minute))
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name != "canary" {
			continue
		}
		a := &fleetv1alpha1.WaveAnalysisStatus{Phase: fleetv1alpha1.AnalysisPassed, StartedAt: metav1.NewTime(now.Add(-5 * time.Minute)),
			Metrics: []fleetv1alpha1.MetricRun{
				{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisPassed, Successful: 5,
					Last: &fleetv1alpha1.MeasurementRecord{At: last, Phase: "Successful", Value: "0.02"}},
				{Name: "latency", Phase: fleetv1alpha1.AnalysisPassed, Successful: 5},
			}}
		if running {
			next := metav1.NewTime(now.Add(time.Minute))
			a.Phase, a.NextMeasurementAt = fleetv1alpha1.AnalysisMeasuring, &next
		}
		ro.Status.Waves[i].Analysis = a
	}
	return in
}

func TestBuildAnalysis(t *testing.T) {
	t.Parallel()
	t.Run("the queries select the wave's targets and, as the baseline, the targets not on the Freight", func(t *testing.T) {
		t.Parallel()
		in := analysedInput(t, true)
		v, ok := BuildAnalysis(in, "canary")
		require.True(t, ok)
		require.Equal(t, dashtest.Rollout, v.Rollout)
		require.Equal(t, now.Add(-5*time.Minute), v.Start)
		require.Equal(t, now, v.End, "a running analysis is plotted up to now")
		require.Equal(t, promquery.RangeStep(v.Start, v.End, plotPoints), v.Step)
		require.Len(t, v.Metrics, 2)
		canary, _ := in.Plan.Wave("canary")
		critical, _ := in.Plan.Wave("critical")
		for _, m := range v.Metrics {
			require.Empty(t, m.Problem, m.Name)
			for _, id := range []string{canary.Members[2].ID, canary.Members[3].ID} {
				require.Contains(t, m.Queries.Targets, id, "%s: the wave's targets", m.Name)
				require.NotContains(t, m.Queries.Baseline, id, "%s: a wave target is not in the baseline", m.Name)
			}
			require.Contains(t, m.Queries.Baseline, critical.Members[0].ID, "%s: a pending target is in the baseline", m.Name)
		}
		require.True(t, v.Metrics[0].Baseline)
		require.Equal(t, "result <= 1.5 * baseline", v.Metrics[0].Condition)
		require.False(t, v.Metrics[1].Baseline, "the plain metric's baseline line is for comparison only")
		require.True(t, strings.HasPrefix(v.Metrics[1].Queries.Baseline, "max(latency{cluster=~"))
	})
	t.Run("a finished analysis is plotted up to its last measurement", func(t *testing.T) {
		t.Parallel()
		v, ok := BuildAnalysis(analysedInput(t, false), "canary")
		require.True(t, ok)
		require.Equal(t, now.Add(-time.Minute), v.End)
	})
	t.Run("without the plan snapshot the page says why there is no plot", func(t *testing.T) {
		t.Parallel()
		in := analysedInput(t, true)
		in.Plan = nil
		v, ok := BuildAnalysis(in, "canary")
		require.True(t, ok)
		require.Contains(t, v.Metrics[0].Problem, "plan snapshot cannot be read")
		require.Empty(t, v.Metrics[0].Queries.Targets)
	})
	t.Run("a wave whose analysis did not start has no page", func(t *testing.T) {
		t.Parallel()
		_, ok := BuildAnalysis(analysedInput(t, true), "general")
		require.False(t, ok)
	})
}

func Test_drawPlot(t *testing.T) {
	t.Parallel()
	v, ok := BuildAnalysis(analysedInput(t, true), "canary")
	require.True(t, ok)
	m := &v.Metrics[0]
	series := plotSeries{
		Wave:     []promquery.TimeSeries{{Points: []promquery.Point{{T: v.Start, V: 0.02}, {T: v.Start.Add(time.Minute), V: 0.03}}}},
		Baseline: []promquery.TimeSeries{{Points: []promquery.Point{{T: v.Start, V: 0.004}, {T: v.Start.Add(time.Minute), V: 0.004}}}},
	}
	svg := string(drawPlot(&v, m, series))
	require.Equal(t, 1, strings.Count(svg, `<polyline class="series wave" data-series="wave canary"`))
	require.Equal(t, 1, strings.Count(svg, `<polyline class="series baseline" data-series="baseline"`))
	require.Contains(t, svg, `<circle class="marker Successful"`, "the last measurement, coloured by its verdict")
}

func TestHandler_waveAnalysis(t *testing.T) {
	t.Parallel()
	in := analysedInput(t, true)
	// Nothing listens on port 1: every query fails, and the page says so.
	in.FleetStage.Spec.Analysis.Prometheus.Address = "http://127.0.0.1:1"
	objs := []client.Object{in.FleetStage, &in.Rollouts[0]}
	for _, obj := range dashtest.NewFleet(40, now).Objects() {
		switch obj.(type) {
		case *fleetv1alpha1.FleetStage, *fleetv1alpha1.FleetRollout:
		default:
			objs = append(objs, obj)
		}
	}
	ts := serveReader(t, fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).Build())

	code, body := get(t, ts.URL+fleetPage)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<a class="analysis-link" href="`+fleetPage+`/waves/canary/analysis">analysis Measuring</a>`)

	code, body = get(t, ts.URL+fleetPage+"/waves/canary/analysis")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `<section class="card metric" data-metric="error-ratio">`)
	require.Contains(t, body, "result &lt;= 1.5 * baseline")
	require.Contains(t, body, "the query of the wave&#39;s targets: Unavailable: Prometheus is unreachable")

	code, _ = get(t, ts.URL+fleetPage+"/waves/general/analysis")
	require.Equal(t, http.StatusNotFound, code, "a wave whose analysis did not start")
	code, body = get(t, ts.URL+"/projects/other/fleetstages/prod/waves/canary/analysis")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, `Project "other" is not served`)
}
