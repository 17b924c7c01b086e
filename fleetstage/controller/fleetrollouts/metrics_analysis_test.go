package fleetrollouts

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func analysedRollout(runs ...fleetv1alpha1.MetricRun) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-1a2b"},
		Spec:       fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod"},
		Status: fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{
			{Name: "pilot"},
			{Name: "canary", Analysis: &fleetv1alpha1.WaveAnalysisStatus{Phase: fleetv1alpha1.AnalysisMeasuring, Metrics: runs}},
		}},
	}
}

func Test_analysisMetrics_observeAnalysis(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := newRolloutMetrics(reg)
	measured := func(phase string) float64 {
		return promtestutil.ToFloat64(m.measurements.WithLabelValues("shop", "prod", "canary", "error-ratio", phase))
	}
	runs := func(phase string) float64 {
		return promtestutil.ToFloat64(m.runs.WithLabelValues("shop", "prod", "canary", "error-ratio", phase))
	}

	// The analysis starts: two measurements, one of them inconclusive.
	first := analysedRollout(fleetv1alpha1.MetricRun{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisMeasuring,
		Successful: 1, Inconclusive: 1})
	m.observeAnalysis(&fleetv1alpha1.FleetRolloutStatus{}, first)
	require.InDelta(t, 1, measured("Successful"), 0)
	require.InDelta(t, 1, measured("Inconclusive"), 0)
	require.InDelta(t, 0, measured("Failed"), 0)

	// The same status written again counts nothing more.
	m.observeAnalysis(&first.Status, first)
	require.InDelta(t, 1, measured("Successful"), 0)

	// Two more measurements, a failure and an error, and the run fails.
	second := analysedRollout(fleetv1alpha1.MetricRun{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisFailed,
		Successful: 1, Inconclusive: 1, Failed: 1, Errors: 1})
	m.observeAnalysis(&first.Status, second)
	require.InDelta(t, 1, measured("Failed"), 0)
	require.InDelta(t, 1, measured("Error"), 0)
	require.InDelta(t, 1, runs("Failed"), 0)
	m.observeAnalysis(&second.Status, second)
	require.InDelta(t, 1, runs("Failed"), 0, "a run that stays failed is counted once")
	require.InDelta(t, 0, runs("Passed"), 0)

	m.queryObserver("shop", "prod")("range", 250*time.Millisecond, "ok")
	require.Equal(t, 1, promtestutil.CollectAndCount(m.queries, "kargo_fleet_analysis_query_duration_seconds"))

	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "kargo_fleet_analysis_") {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				require.NotContains(t, []string{"rollout", "target", "freight"}, l.GetName(),
					"%s: no label that grows with rollouts, targets or Freight", f.GetName())
			}
		}
	}
}
