//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// Error ratios of a target's service, as the Kargo simulator counts its
// requests (the suite's ServiceMetrics): the bad Freight fails 5 % of
// them, any other Freight (and none) the default 0.1 %.
const (
	goodErrorRatio = kargosim.DefaultServiceErrorRatio
	badErrorRatio  = 0.05
)

// rateWindow is the window of the queries' rate(): three scrapes a second
// apart, so every rate has at least two samples.
const rateWindow = "3s"

// errorRatioQuery is the error ratio of the wave's targets in the Project
// ns: their failed requests over all their requests, over rateWindow.
func errorRatioQuery(ns string) string { return errorRatioOf(ns, "{{targets.regex}}", "") }

// errorRatioByTargetQuery is errorRatioQuery for each target: one series
// per target (cluster).
func errorRatioByTargetQuery(ns string) string {
	return errorRatioOf(ns, "{{targets.regex}}", " by (cluster)")
}

// errorRatioOf is the error ratio of the targets of the Project ns whose
// cluster label matches the regex cluster, summed by.
func errorRatioOf(ns, cluster, by string) string {
	rate := func(code string) string {
		return fmt.Sprintf(`sum%s (rate(%s{project=%q, %scluster=~%q}[%s]))`,
			by, kargosim.ServiceRequestsMetric, ns, code, cluster, rateWindow)
	}
	return rate(`code="500", `) + " / " + rate("")
}

// startFleetPrometheus starts a real Prometheus scraping the Kargo
// simulator's service metrics every second: every target Stage's request
// counters, labelled project and cluster=<target id>, failing the share of
// requests of the Freight the Stage runs at each scrape.
func startFleetPrometheus(t *testing.T) *promtest.Server {
	t.Helper()
	return promtest.StartWith(t, promtest.Options{MetricsPath: kargosim.ServiceMetricsPath}, env.Simulator.MetricsAddress())
}

// requireErrorRatio checks that a measured value is an error ratio between
// lo and hi, and returns it.
func requireErrorRatio(t *testing.T, value string, lo, hi float64, msgAndArgs ...any) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(value, 64)
	require.NoError(t, err, msgAndArgs...)
	require.GreaterOrEqual(t, v, lo, msgAndArgs...)
	require.LessOrEqual(t, v, hi, msgAndArgs...)
	return v
}

// requireErrorRatioOf checks that a measured value is the error ratio
// want, but for the rounding of Prometheus's arithmetic.
func requireErrorRatioOf(t *testing.T, value string, want float64, msgAndArgs ...any) {
	t.Helper()
	requireErrorRatio(t, value, want-1e-9, want+1e-9, msgAndArgs...)
}

// TestWaveAnalysisGatesCanary runs a fleet whose canary wave passes only
// when the error ratio of its targets, read from a real Prometheus, stays
// below 1 %: the good Freight passes every wave; the bad one, which raises
// the canary targets' error ratio once they run it, fails canary on the
// metric, halts, and is rolled back.
func TestWaveAnalysisGatesCanary(t *testing.T) {
	const ns = "analysis"
	dumpPromotions(t, ns)
	prom := startFleetPrometheus(t)
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	targets := append(inline("pilot", 1, map[string]string{"ring": "pilot"}, nil),
		inline("canary", 2, map[string]string{"ring": "canary"}, nil)...)
	targets = append(targets, inline("general", 2, map[string]string{"ring": "general"}, nil)...)
	f := newFleet(t, ns, fleetSpec{
		targets: targets,
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: ring("pilot")},
			{Name: "canary", Selector: ring("canary"), Analysis: &fleetv1alpha1.WaveAnalysis{
				Metrics: []fleetv1alpha1.AnalysisMetric{{
					Name:             "error-ratio",
					Query:            errorRatioQuery(ns),
					Interval:         &metav1.Duration{Duration: 2 * time.Second},
					Count:            ptr.To[int32](3),
					SuccessCondition: "result < 0.01",
				}},
			}},
			{Name: "general", Selector: ring("general")},
		},
		policy: fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}},
		analysis: &fleetv1alpha1.FleetAnalysis{
			Prometheus: fleetv1alpha1.PrometheusSource{Address: prom.URL(), Timeout: &metav1.Duration{Duration: 5 * time.Second}},
		},
	})

	start := time.Now()
	f.ship(f.good)
	good := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, good.Status.Phase, good.Status.Message)
	canary := good.Status.Waves[1]
	require.Nil(t, good.Status.Waves[0].Analysis, "the pilot wave runs no analysis")
	require.NotNil(t, canary.Analysis, "the canary wave ran its analysis")
	require.Equal(t, fleetv1alpha1.AnalysisPassed, canary.Analysis.Phase, canary.Analysis.Message)
	m := canary.Analysis.Metrics[0]
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Successful, int32(3))
	requireErrorRatioOf(t, m.Last.Value, goodErrorRatio, "the canary targets fail the good Freight's 0.1 % of requests")
	require.GreaterOrEqual(t, canary.FinishedAt.Sub(canary.Analysis.StartedAt.Time), 6*time.Second,
		"the wave passed no sooner than interval × count after its targets were done")
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fleet-canary"}, st) == nil &&
			strings.Contains(st.Annotations[kargo.DescriptionAnnotation], "Analysis: Passed; error-ratio Passed (last value "+m.Last.Value+")")
	}, wait, tick, "the canary wave Stage's description shows the analysis verdict")
	t.Logf("good Freight through every wave in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	f.ship(f.bad)
	bad := f.rollout(f.bad, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, bad.Status.Phase, bad.Status.Message)
	t.Logf("bad Freight failed canary in %s", time.Since(start).Round(time.Millisecond))
	breach := meta.FindStatusCondition(bad.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(t, breach)
	require.Equal(t, fleetv1alpha1.AnalysisFailedReason, breach.Reason)
	require.Contains(t, breach.Message, "wave canary: analysis failed")
	require.Contains(t, breach.Message, "error-ratio")
	require.Equal(t, fleetv1alpha1.WaveSucceeded, bad.Status.Waves[0].Phase)
	require.Equal(t, fleetv1alpha1.WaveFailed, bad.Status.Waves[1].Phase)
	require.Equal(t, fleetv1alpha1.WavePending, bad.Status.Waves[2].Phase)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, bad.Status.Waves[1].Analysis.Phase)
	// The failed measurement read at least the threshold and at most the
	// bad Freight's ratio: its window may still hold requests counted
	// before both canary targets ran it.
	last := bad.Status.Waves[1].Analysis.Metrics[0].Last
	v := requireErrorRatio(t, last.Value, 0.01, badErrorRatio+1e-9, "the failed measurement read the bad Freight's errors")
	require.Contains(t, breach.Message, "result = "+strconv.FormatFloat(v, 'g', 4, 64), "the breach names the failed measurement")
	require.Empty(t, f.promotionsOf(f.bad, "general"), "no general target was asked to take the bad Freight")
	requireFleetStageEvent(t, ns, "AnalysisMetricFailed", "metric error-ratio failed")

	rb := f.awaitRollback(f.good)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Contains(t, rb.Annotations[fleetv1alpha1.RollbackReasonAnnotation], "analysis failed")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s is back on (or never left) the good Freight", id)
	}
	t.Logf("bad Freight failed and rolled back in %s", time.Since(start).Round(time.Millisecond))

	// The controller's metrics counted the measurements and the two runs
	// by verdict, and timed the queries.
	canaryMetric := map[string]string{"namespace": ns, "wave": "canary", "metric": "error-ratio"}
	require.GreaterOrEqual(t, analysisMetric(t, "kargo_fleet_analysis_measurements_total", canaryMetric, "Successful"), 3.0)
	require.GreaterOrEqual(t, analysisMetric(t, "kargo_fleet_analysis_measurements_total", canaryMetric, "Failed"), 1.0)
	require.InDelta(t, 1, analysisMetric(t, "kargo_fleet_analysis_runs_total", canaryMetric, "Passed"), 0)
	require.InDelta(t, 1, analysisMetric(t, "kargo_fleet_analysis_runs_total", canaryMetric, "Failed"), 0)
	queries := analysisMetric(t, "kargo_fleet_analysis_query_duration_seconds", map[string]string{"namespace": ns, "kind": "instant"}, "")
	require.GreaterOrEqual(t, queries, 4.0, "every measurement's query is timed")
}

// analysisMetric sums, in the controller's registry, the counters (or the
// histograms' sample counts) of name whose labels include want and, when
// phase is set, phase=<phase>.
func analysisMetric(t *testing.T, name string, want map[string]string, phase string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			match := phase == "" || labels["phase"] == phase
			for k, v := range want {
				match = match && labels[k] == v
			}
			switch {
			case !match:
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// requireFleetStageEvent waits for an Event about the FleetStage of the
// reason whose note contains text.
func requireFleetStageEvent(t *testing.T, ns, reason, text string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Kind == "FleetStage" && strings.Contains(e.Note, text) {
				return true
			}
		}
		return false
	}, wait, tick, "no %s Event on the FleetStage saying %q", reason, text)
}
