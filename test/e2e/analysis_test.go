//go:build e2e

package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/analysistest"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

// Error ratios the target server gives the analysis scenarios' Freight, and
// the fleet-wide incident.
const (
	okErrorRatio       = 0.01
	badErrorRatio      = 0.3
	incidentErrorRatio = 0.2
)

// counter is the target server's request counter.
var counter = analysistest.Counter{Name: "targetserver_requests_total", Label: "target"}

// analysisInterval is every metric's interval.
const analysisInterval = analysistest.Interval

// analysisFleet is a fleet whose FleetStage reads a Prometheus of its own
// scraping the target server: waves canary (2 targets) and general (3).
type analysisFleet struct {
	*fleet
	prom *promtest.Server
}

// newAnalysisFleet starts the test's Prometheus and the fleet. metrics are
// the FleetStage's spec.analysis.metrics, canary the canary wave's own
// analysis. Target ids carry a random tag: the target server counts traffic
// by target id, across Projects.
func newAnalysisFleet(t *testing.T, prefix string, metrics []fleetv1alpha1.AnalysisMetric,
	canary *fleetv1alpha1.WaveAnalysis) *analysisFleet {
	t.Helper()
	prom := startPrometheus(t)
	tag := make([]byte, 3)
	_, _ = rand.Read(tag)
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	ts := append(inline("canary-"+hex.EncodeToString(tag), 2, map[string]string{"ring": "canary"}),
		inline("general-"+hex.EncodeToString(tag), 3, map[string]string{"ring": "general"})...)
	f := newFleet(t, prefix, fleetSpec{
		targets: ts,
		waves: []fleetv1alpha1.Wave{
			{Name: "canary", Selector: ring("canary"), Analysis: canary},
			{Name: "general", Selector: ring("general")},
		},
		policy: fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}},
		analysis: &fleetv1alpha1.FleetAnalysis{
			Prometheus: fleetv1alpha1.PrometheusSource{Address: prometheusURL(prom), Timeout: &metav1.Duration{Duration: 3 * time.Second}},
			Metrics:    metrics,
		},
	})
	t.Cleanup(func() { setErrors(t, targetserver.Errors{}) })
	return &analysisFleet{fleet: f, prom: prom}
}

// startPrometheus starts a real Prometheus for the test, scraping the target
// server's /metrics every second.
func startPrometheus(t *testing.T) *promtest.Server {
	t.Helper()
	u, err := url.Parse(cfg.targetURL)
	require.NoError(t, err)
	return promtest.StartWith(t, promtest.Options{
		Listen:      cfg.prometheusListen,
		Scheme:      u.Scheme,
		MetricsPath: strings.TrimSuffix(u.Path, "/") + "/metrics",
	}, u.Host)
}

// prometheusURL is prom as the kargo-fleet controller reaches it.
func prometheusURL(prom *promtest.Server) string {
	if cfg.prometheusURL != "" {
		return cfg.prometheusURL
	}
	return prom.URL()
}

func setErrors(t *testing.T, e targetserver.Errors) {
	t.Helper()
	require.NoError(t, targets.SetErrors(context.Background(), e))
}

// setWaveAnalysis gives wave its own analysis and waits until the
// FleetStage controller has seen the change.
func (f *analysisFleet) setWaveAnalysis(wave string, metrics ...fleetv1alpha1.AnalysisMetric) {
	f.t.Helper()
	analysistest.SetWaveAnalysis(f.t, kube, client.ObjectKey{Namespace: f.ns, Name: fleetName}, cfg.timeout, wave, metrics...)
}

// waveStageDescription returns the Kargo UI description of a wave Stage.
func (f *analysisFleet) waveStageDescription(wave string) string {
	return analysistest.WaveStageDescription(kube, client.ObjectKey{Namespace: f.ns, Name: fleetName}, wave)
}

// TestWaveAnalysisPassesGoodFreightThroughEveryWave: the good Freight's
// error ratio, read from a real Prometheus, stays below the threshold of
// the FleetStage's analysis; every wave passes no sooner than interval ×
// count after its targets were done.
func TestWaveAnalysisPassesGoodFreightThroughEveryWave(t *testing.T) {
	scenario(t)
	const count = 3
	f := newAnalysisFleet(t, "analysis-pass", []fleetv1alpha1.AnalysisMetric{counter.ErrorRatioMetric(count)}, nil)
	good := f.newFreight("good")
	setErrors(t, targetserver.Errors{Freight: map[string]float64{good: okErrorRatio}})
	start := time.Now()
	f.promote(good, "canary")
	ro := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	for _, w := range ro.Status.Waves {
		report(t, "%s", analysistest.RequirePassed(t, w, count, okErrorRatio))
	}
	f.eventually(func() bool { return strings.Contains(f.waveStageDescription("general"), "Analysis: Passed") },
		"the general wave Stage's description shows the analysis passed: %q", f.waveStageDescription("general"))
	f.requireAllOn(good)
	report(t, "good Freight through canary and general, each with its analysis, in %s", time.Since(start).Round(100*time.Millisecond))
}

// TestWaveAnalysisFailsBadFreightOnCanaryAndRollsBack: the bad Freight
// raises the canary targets' error ratio far above the rest of the fleet's;
// the baseline metric fails the canary wave within interval × (failureLimit
// + 1) of its analysis start, plus one interval, and the fleet rolls back.
func TestWaveAnalysisFailsBadFreightOnCanaryAndRollsBack(t *testing.T) {
	scenario(t)
	f := newAnalysisFleet(t, "analysis-fail", nil, nil)
	good, bad := f.newFreight("good"), f.newFreight("bad")
	setErrors(t, targetserver.Errors{Freight: map[string]float64{good: okErrorRatio, bad: badErrorRatio}})
	f.promote(good, "canary")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded,
		f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)
	// The baseline is the fleet on the good Freight: only now does it have
	// one.
	f.setWaveAnalysis("canary", counter.ErrorRatioVsFleetMetric())

	start := time.Now()
	f.promote(bad, "canary")
	ro := f.await(bad, forward, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	failedSeen := time.Since(start)
	report(t, "%s", analysistest.RequireFailedOnBaseline(t, ro, "canary", "general"))
	for target := range callsFor(t, bad) {
		require.True(t, strings.HasPrefix(target, "canary-"), "general target %s was asked to take the bad Freight", target)
	}

	rb := f.await(good, rollback, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Contains(t, rb.Annotations[fleetv1alpha1.RollbackReasonAnnotation], "analysis failed")
	f.requireAllOn(good)
	report(t, "promote_to_failed=%s promote_to_rolled_back=%s", failedSeen.Round(100*time.Millisecond),
		time.Since(start).Round(100*time.Millisecond))
}

// TestWaveAnalysisBaselineIgnoresGlobalIncident: an incident raises every
// target's error ratio during the canary wave's analysis; the baseline
// metric compares canary with the rest of the fleet, which suffers as
// much, and the good Freight passes.
func TestWaveAnalysisBaselineIgnoresGlobalIncident(t *testing.T) {
	scenario(t)
	f := newAnalysisFleet(t, "analysis-incident", nil, nil)
	v1, good := f.newFreight("v1"), f.newFreight("good")
	ratios := map[string]float64{v1: okErrorRatio, good: okErrorRatio}
	setErrors(t, targetserver.Errors{Freight: ratios})
	f.promote(v1, "canary")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded,
		f.await(v1, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)
	f.setWaveAnalysis("canary", counter.ErrorRatioVsFleetMetric())

	setErrors(t, targetserver.Errors{Freight: ratios, Incident: incidentErrorRatio})
	incident := time.Now()
	f.promote(good, "canary")
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.find(good, forward)
		w, ok := analysistest.FindWave(ro, "canary")
		return ok && (ro.Status.Phase.IsFinal() || w.Phase == fleetv1alpha1.WaveSucceeded)
	}, "the canary wave of the good Freight never finished: %s", describe(ro))
	// The incident lasted through every measurement of the canary wave.
	setErrors(t, targetserver.Errors{Freight: ratios})
	report(t, "incident lasted %s, until the canary wave ended", time.Since(incident).Round(100*time.Millisecond))
	report(t, "%s", analysistest.RequirePassedUnderIncident(t, ro, "canary"))

	done := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.Empty(t, f.rolloutsOf(rollback), "nothing was rolled back")
	f.requireAllOn(good)
}

// rolloutsOf lists the fleet's rollouts in direction dir.
func (f *analysisFleet) rolloutsOf(dir fleetv1alpha1.RolloutDirection) []string {
	var out []string
	for _, ro := range f.rollouts() {
		if ro.Spec.Direction == dir {
			out = append(out, ro.Name)
		}
	}
	return out
}

// TestWaveAnalysisWaitsWhilePrometheusIsDown: Prometheus stops while the
// canary wave is measured; the analysis turns Inconclusive, says why in
// the FleetRollout and on the wave Stage, and the wave waits, longer than
// its analysis would have taken, without passing. Restarted, Prometheus
// lets the wave finish.
func TestWaveAnalysisWaitsWhilePrometheusIsDown(t *testing.T) {
	scenario(t)
	const count = 4
	f := newAnalysisFleet(t, "analysis-promdown", nil,
		&fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{counter.ErrorRatioMetric(count)}})
	good := f.newFreight("good")
	setErrors(t, targetserver.Errors{Freight: map[string]float64{good: okErrorRatio}})
	f.promote(good, "canary")
	f.eventually(func() bool {
		w, ok := analysistest.FindWave(f.find(good, forward), "canary")
		return ok && w.Analysis != nil && len(w.Analysis.Metrics) == 1 && w.Analysis.Metrics[0].Successful >= 1
	}, "the canary wave's analysis never took a successful measurement")

	f.prom.Stop()
	stopped := time.Now()
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.find(good, forward)
		w, ok := analysistest.FindWave(ro, "canary")
		return ok && w.Analysis != nil && w.Analysis.Phase == fleetv1alpha1.AnalysisInconclusive &&
			strings.Contains(w.Analysis.Message, "Prometheus is unavailable")
	}, "the canary analysis never said Prometheus is unavailable: %s", describe(ro))
	inconclusiveAfter := time.Since(stopped)
	require.Contains(t, ro.Status.Message, "wave canary: analysis inconclusive")
	require.Contains(t, analysistest.WaveOf(t, ro, "canary").Waiting, "Prometheus is unavailable")
	f.eventually(func() bool { return strings.Contains(f.waveStageDescription("canary"), "Analysis: Inconclusive") },
		"the canary wave Stage's description shows the analysis waits: %q", f.waveStageDescription("canary"))
	report(t, "inconclusive %s after Prometheus stopped: %s", inconclusiveAfter.Round(100*time.Millisecond), analysistest.WaveOf(t, ro, "canary").Waiting)

	// Down for longer than the whole analysis would take: the wave waits.
	hold := analysisInterval*count + analysisInterval
	for time.Since(stopped) < hold {
		ro = f.find(good, forward)
		w := analysistest.WaveOf(t, ro, "canary")
		require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
		require.Equal(t, fleetv1alpha1.WaveProgressing, w.Phase, w.Waiting)
		require.NotEqual(t, fleetv1alpha1.AnalysisPassed, w.Analysis.Phase, w.Analysis.Message)
		time.Sleep(tick)
	}
	for target := range callsFor(t, good) {
		require.True(t, strings.HasPrefix(target, "canary-"), "general target %s was called while canary waited", target)
	}
	before := analysistest.MetricRun(t, analysistest.WaveOf(t, ro, "canary"))
	require.Positive(t, before.Errors, "measurements while Prometheus was down were errors")

	f.prom.Start()
	restarted := time.Now()
	done := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	canary := analysistest.WaveOf(t, done, "canary")
	m := analysistest.MetricRun(t, canary)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Successful, int32(count))
	require.NotNil(t, canary.FinishedAt)
	report(t, "held %s with Prometheus down (successful=%d errors=%d then); canary passed %s after the restart; measurements successful=%d errors=%d inconclusive=%d",
		restarted.Sub(stopped).Round(100*time.Millisecond), before.Successful, before.Errors,
		canary.FinishedAt.Sub(restarted).Round(time.Second), m.Successful, m.Errors, m.Inconclusive)
	f.requireAllOn(good)
}
