//go:build integration

package rollout_test

import (
	"context"
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

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// badErrorRatio is the share of failed requests the Kargo simulator
// reports for a target running the bad Freight (suite_test.go); every other
// target fails kargosim.DefaultServiceErrorRatio of them.
const badErrorRatio = 0.05

// errorRatioQuery is the share of failed requests of the wave's targets of
// the Project over the last scrape interval, from the counters the Kargo
// simulator serves.
const errorRatioQuery = `sum(irate(kargo_simulator_http_requests_total{project="analysis", code="500", cluster=~"{{targets.regex}}"}[3s]))
/ sum(irate(kargo_simulator_http_requests_total{project="analysis", cluster=~"{{targets.regex}}"}[3s]))`

// startFleetPrometheus starts a real Prometheus scraping, every second,
// the service metrics the Kargo simulator serves for its target Stages.
func startFleetPrometheus(t *testing.T) *promtest.Server {
	t.Helper()
	addr := env.Simulator.MetricsAddress()
	require.NotEmpty(t, addr, "the suite's Kargo simulator serves service metrics")
	return promtest.Start(t, addr)
}

// requireRatio checks that a measured value is the error ratio want.
func requireRatio(t *testing.T, want float64, value string) {
	t.Helper()
	got, err := strconv.ParseFloat(value, 64)
	require.NoError(t, err, "measured value %q", value)
	require.InDelta(t, want, got, 1e-9, "measured value %q", value)
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
					Query:            errorRatioQuery,
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
	requireRatio(t, kargosim.DefaultServiceErrorRatio, m.Last.Value)
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
	require.Contains(t, breach.Message, "result = 0.05")
	require.Equal(t, fleetv1alpha1.WaveSucceeded, bad.Status.Waves[0].Phase)
	require.Equal(t, fleetv1alpha1.WaveFailed, bad.Status.Waves[1].Phase)
	require.Equal(t, fleetv1alpha1.WavePending, bad.Status.Waves[2].Phase)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, bad.Status.Waves[1].Analysis.Phase)
	requireRatio(t, badErrorRatio, bad.Status.Waves[1].Analysis.Metrics[0].Last.Value)
	require.Empty(t, f.promotionsOf(f.bad, "general"), "no general target was asked to take the bad Freight")
	requireFleetStageEvent(t, ns, "AnalysisMetricFailed", "metric error-ratio failed")

	rb := f.awaitRollback(f.good)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Contains(t, rb.Annotations[fleetv1alpha1.RollbackReasonAnnotation], "analysis failed")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s is back on (or never left) the good Freight", id)
	}
	t.Logf("bad Freight failed and rolled back in %s", time.Since(start).Round(time.Millisecond))
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
