//go:build integration

package rollout_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// Error ratios the fleet exporter reports for a target, by the Freight its
// Stage runs.
const (
	goodErrorRatio = 0.001
	badErrorRatio  = 0.05
)

// fleetExporter is the test fixture a real Prometheus scrapes: one
// error-ratio gauge per target of a Project, labelled cluster=<target id>,
// following the Freight the target's Stage runs at scrape time. A target
// whose Promotion of the bad Freight succeeded starts failing requests.
type fleetExporter struct {
	ns, bad string
	desc    *prometheus.Desc
	// incident, while set, raises every target's error ratio to
	// badErrorRatio, whatever Freight it runs: a fleet-wide incident.
	incident atomic.Bool
}

// Describe implements prometheus.Collector.
func (e *fleetExporter) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

// Collect implements prometheus.Collector.
func (e *fleetExporter) Collect(ch chan<- prometheus.Metric) {
	list := &kargo.StageList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(e.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return
	}
	for _, st := range list.Items {
		ratio := goodErrorRatio
		if names := st.CurrentFreightNames(); e.incident.Load() || len(names) > 0 && names[0] == e.bad {
			ratio = badErrorRatio
		}
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.GaugeValue, ratio, st.Labels[fleetv1alpha1.TargetLabel])
	}
}

// startFleetPrometheus serves the Project's target metrics and starts a
// real Prometheus scraping them every second.
func startFleetPrometheus(t *testing.T, ns, bad string) *promtest.Server {
	t.Helper()
	_, prom := startFleetExporter(t, ns, bad)
	return prom
}

// startFleetExporter is startFleetPrometheus returning the exporter too.
func startFleetExporter(t *testing.T, ns, bad string) (*fleetExporter, *promtest.Server) {
	t.Helper()
	exp := &fleetExporter{ns: ns, bad: bad, desc: prometheus.NewDesc("kargo_fleet_test_error_ratio",
		"Ratio of failed requests of a target in the test fleet.", []string{"cluster"}, nil)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return exp, promtest.Start(t, strings.TrimPrefix(srv.URL, "http://"))
}

// TestWaveAnalysisGatesCanary runs a fleet whose canary wave passes only
// when the error ratio of its targets, read from a real Prometheus, stays
// below 1 %: the good Freight passes every wave; the bad one, which raises
// the canary targets' error ratio once they run it, fails canary on the
// metric, halts, and is rolled back.
func TestWaveAnalysisGatesCanary(t *testing.T) {
	const ns = "analysis"
	dumpPromotions(t, ns)
	prom := startFleetPrometheus(t, ns, "f2-bad")
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
					Query:            `max(kargo_fleet_test_error_ratio{cluster=~"{{targets.regex}}"})`,
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
	require.Equal(t, "0.001", m.Last.Value)
	require.GreaterOrEqual(t, canary.FinishedAt.Sub(canary.Analysis.StartedAt.Time), 6*time.Second,
		"the wave passed no sooner than interval × count after its targets were done")
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		return env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fleet-canary"}, st) == nil &&
			strings.Contains(st.Annotations[kargo.DescriptionAnnotation], "Analysis: Passed; error-ratio Passed (last value 0.001)")
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
	require.Equal(t, "0.05", bad.Status.Waves[1].Analysis.Metrics[0].Last.Value)
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
