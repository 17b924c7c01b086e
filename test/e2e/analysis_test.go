//go:build e2e

package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
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

// analysisInterval is every metric's interval, and the rate window of
// the queries below: one interval of traffic per measurement.
const analysisInterval = 5 * time.Second

// Queries of the analysis scenarios over the target server's traffic: the
// error ratio of the wave's targets as one value, and one per target (a
// baseline metric pools each side's series).
const (
	errorRatioQuery = `sum(rate(targetserver_requests_total{code="500", target=~"{{targets.regex}}"}[5s]))
/ sum(rate(targetserver_requests_total{target=~"{{targets.regex}}"}[5s]))`
	errorRatioByTargetQuery = `sum by (target) (rate(targetserver_requests_total{code="500", target=~"{{targets.regex}}"}[5s]))
/ sum by (target) (rate(targetserver_requests_total{target=~"{{targets.regex}}"}[5s]))`
)

// errorRatioMetric passes a wave whose error ratio stays below 5 % for
// count measurements.
func errorRatioMetric(count int32) fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{
		Name:             "error-ratio",
		Query:            errorRatioQuery,
		Interval:         &metav1.Duration{Duration: analysisInterval},
		Count:            ptr.To(count),
		SuccessCondition: "result < 0.05",
	}
}

// vsFleetFailureLimit is the failure limit of errorRatioVsFleetMetric.
const vsFleetFailureLimit = 1

// errorRatioVsFleetMetric fails a wave whose targets' error ratio is more
// than 1.5 times the baseline's (and above 2 %), significantly.
func errorRatioVsFleetMetric() fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{
		Name:             "error-ratio-vs-fleet",
		Query:            errorRatioByTargetQuery,
		Interval:         &metav1.Duration{Duration: analysisInterval},
		Count:            ptr.To[int32](4),
		FailureLimit:     ptr.To[int32](vsFleetFailureLimit),
		SuccessCondition: "result <= 1.5 * baseline || result < 0.02",
		Baseline:         &fleetv1alpha1.BaselineAnalysis{Direction: fleetv1alpha1.BaselineIncrease},
	}
}

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
	var generation int64
	require.NoError(f.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs := f.fleetStage()
		require.NotNil(f.t, fs)
		for i := range fs.Spec.Waves {
			if fs.Spec.Waves[i].Name == wave {
				fs.Spec.Waves[i].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: metrics}
			}
		}
		err := kube.Update(context.Background(), fs)
		generation = fs.Generation
		return err
	}))
	f.eventually(func() bool {
		fs := f.fleetStage()
		ready := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= generation
	}, "the FleetStage never became Ready with the analysis of wave %s", wave)
}

// findWave returns the progress of wave in ro, if its status has it yet.
func findWave(ro *fleetv1alpha1.FleetRollout, wave string) (fleetv1alpha1.WaveProgress, bool) {
	if ro != nil {
		for _, w := range ro.Status.Waves {
			if w.Name == wave {
				return w, true
			}
		}
	}
	return fleetv1alpha1.WaveProgress{}, false
}

// waveOf returns the progress of wave in ro.
func waveOf(t *testing.T, ro *fleetv1alpha1.FleetRollout, wave string) fleetv1alpha1.WaveProgress {
	t.Helper()
	w, ok := findWave(ro, wave)
	require.True(t, ok, "no wave %s in rollout %s", wave, describe(ro))
	return w
}

// metricRun returns the only metric run of a wave's analysis.
func metricRun(t *testing.T, w fleetv1alpha1.WaveProgress) fleetv1alpha1.MetricRun {
	t.Helper()
	require.NotNil(t, w.Analysis, "wave %s ran an analysis", w.Name)
	require.Len(t, w.Analysis.Metrics, 1, "wave %s", w.Name)
	m := w.Analysis.Metrics[0]
	require.NotNil(t, m.Last, "metric %s of wave %s measured", m.Name, w.Name)
	return m
}

// analysisTook is how long the analysis of a finished wave ran.
func analysisTook(t *testing.T, w fleetv1alpha1.WaveProgress) time.Duration {
	t.Helper()
	require.NotNil(t, w.FinishedAt, "wave %s finished", w.Name)
	return w.FinishedAt.Sub(w.Analysis.StartedAt.Time)
}

// waveStageDescription returns the Kargo UI description of a wave Stage.
func (f *analysisFleet) waveStageDescription(wave string) string {
	st := &kargo.Stage{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: render.WaveStageName(fleetName, wave)}, st); err != nil {
		return ""
	}
	return st.Annotations[kargo.DescriptionAnnotation]
}

// baselineReason matches the reason of a baseline measurement.
var baselineReason = regexp.MustCompile(`^wave (\S+) vs baseline (\S+):`)

// TestWaveAnalysisPassesGoodFreightThroughEveryWave: the good Freight's
// error ratio, read from a real Prometheus, stays below the threshold of
// the FleetStage's analysis; every wave passes no sooner than interval ×
// count after its targets were done.
func TestWaveAnalysisPassesGoodFreightThroughEveryWave(t *testing.T) {
	scenario(t)
	const count = 3
	f := newAnalysisFleet(t, "analysis-pass", []fleetv1alpha1.AnalysisMetric{errorRatioMetric(count)}, nil)
	good := f.newFreight("good")
	setErrors(t, targetserver.Errors{Freight: map[string]float64{good: okErrorRatio}})
	start := time.Now()
	f.promote(good, "canary")
	ro := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	for _, w := range ro.Status.Waves {
		require.Equal(t, fleetv1alpha1.WaveSucceeded, w.Phase, w.Name)
		m := metricRun(t, w)
		require.Equal(t, fleetv1alpha1.AnalysisPassed, w.Analysis.Phase, w.Analysis.Message)
		require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
		require.GreaterOrEqual(t, m.Successful, int32(count), m.Reason)
		require.Zero(t, m.Failed, m.Reason)
		v, err := strconv.ParseFloat(m.Last.Value, 64)
		require.NoError(t, err, m.Last.Reason)
		require.InDelta(t, okErrorRatio, v, 0.002, "the analysis read the good Freight's error ratio: %s", m.Last.Reason)
		took := analysisTook(t, w)
		require.GreaterOrEqual(t, took, analysisInterval*count-time.Second, "wave %s passed before interval × count", w.Name)
		report(t, "wave=%s analysis passed %s after it started (interval×count = %s); successful=%d inconclusive=%d errors=%d last=%q",
			w.Name, took, analysisInterval*count, m.Successful, m.Inconclusive, m.Errors, m.Last.Reason)
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
	f.setWaveAnalysis("canary", errorRatioVsFleetMetric())

	start := time.Now()
	f.promote(bad, "canary")
	ro := f.await(bad, forward, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	failedSeen := time.Since(start)
	canary := waveOf(t, ro, "canary")
	require.Equal(t, fleetv1alpha1.WaveFailed, canary.Phase)
	m := metricRun(t, canary)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, canary.Analysis.Phase, canary.Analysis.Message)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, m.Phase, m.Reason)
	require.Equal(t, int32(vsFleetFailureLimit+1), m.Failed, m.Reason)
	require.Contains(t, m.Last.Reason, "the difference is significant")
	breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(t, breach, "the breach is recorded")
	require.Equal(t, fleetv1alpha1.AnalysisFailedReason, breach.Reason)
	require.Contains(t, breach.Message, "wave canary: analysis failed")
	require.Equal(t, fleetv1alpha1.WavePending, waveOf(t, ro, "general").Phase)
	for target := range callsFor(t, bad) {
		require.True(t, strings.HasPrefix(target, "canary-"), "general target %s was asked to take the bad Freight", target)
	}

	took := analysisTook(t, canary)
	bound := analysisInterval*(vsFleetFailureLimit+1) + analysisInterval
	report(t, "canary failed %s after its analysis started (failing measurement %s after); bound interval×(failureLimit+1)+interval = %s; last: %s",
		took, m.Last.At.Sub(canary.Analysis.StartedAt.Time), bound, m.Last.Reason)
	require.LessOrEqual(t, took, bound, "the canary wave failed later than its bound")

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
	f.setWaveAnalysis("canary", errorRatioVsFleetMetric())

	setErrors(t, targetserver.Errors{Freight: ratios, Incident: incidentErrorRatio})
	incident := time.Now()
	f.promote(good, "canary")
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.find(good, forward)
		w, ok := findWave(ro, "canary")
		return ok && (ro.Status.Phase.IsFinal() || w.Phase == fleetv1alpha1.WaveSucceeded)
	}, "the canary wave of the good Freight never finished: %s", describe(ro))
	// The incident lasted through every measurement of the canary wave.
	setErrors(t, targetserver.Errors{Freight: ratios})
	report(t, "incident lasted %s, until the canary wave ended", time.Since(incident).Round(100*time.Millisecond))
	canary := waveOf(t, ro, "canary")
	require.Equal(t, fleetv1alpha1.WaveSucceeded, canary.Phase, ro.Status.Message)
	m := metricRun(t, canary)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.Zero(t, m.Failed, m.Reason)
	got := baselineReason.FindStringSubmatch(m.Last.Reason)
	require.NotNil(t, got, "a baseline measurement: %s", m.Last.Reason)
	wave, err := strconv.ParseFloat(got[1], 64)
	require.NoError(t, err)
	baseline, err := strconv.ParseFloat(got[2], 64)
	require.NoError(t, err)
	require.Greater(t, wave, 0.05, "the canary targets suffered the incident: %s", m.Last.Reason)
	require.Greater(t, baseline, 0.05, "the baseline suffered the incident: %s", m.Last.Reason)
	report(t, "canary passed %s after its analysis started, under the incident: measurements=%d failed=%d last=%q",
		analysisTook(t, canary), m.Successful+m.Failed+m.Inconclusive+m.Errors, m.Failed, m.Last.Reason)

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
		&fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{errorRatioMetric(count)}})
	good := f.newFreight("good")
	setErrors(t, targetserver.Errors{Freight: map[string]float64{good: okErrorRatio}})
	f.promote(good, "canary")
	f.eventually(func() bool {
		w, ok := findWave(f.find(good, forward), "canary")
		return ok && w.Analysis != nil && len(w.Analysis.Metrics) == 1 && w.Analysis.Metrics[0].Successful >= 1
	}, "the canary wave's analysis never took a successful measurement")

	f.prom.Stop()
	stopped := time.Now()
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.find(good, forward)
		w, ok := findWave(ro, "canary")
		return ok && w.Analysis != nil && w.Analysis.Phase == fleetv1alpha1.AnalysisInconclusive &&
			strings.Contains(w.Analysis.Message, "Prometheus is unavailable")
	}, "the canary analysis never said Prometheus is unavailable: %s", describe(ro))
	inconclusiveAfter := time.Since(stopped)
	require.Contains(t, ro.Status.Message, "wave canary: analysis inconclusive")
	require.Contains(t, waveOf(t, ro, "canary").Waiting, "Prometheus is unavailable")
	f.eventually(func() bool { return strings.Contains(f.waveStageDescription("canary"), "Analysis: Inconclusive") },
		"the canary wave Stage's description shows the analysis waits: %q", f.waveStageDescription("canary"))
	report(t, "inconclusive %s after Prometheus stopped: %s", inconclusiveAfter.Round(100*time.Millisecond), waveOf(t, ro, "canary").Waiting)

	// Down for longer than the whole analysis would take: the wave waits.
	hold := analysisInterval*count + analysisInterval
	for time.Since(stopped) < hold {
		ro = f.find(good, forward)
		w := waveOf(t, ro, "canary")
		require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
		require.Equal(t, fleetv1alpha1.WaveProgressing, w.Phase, w.Waiting)
		require.NotEqual(t, fleetv1alpha1.AnalysisPassed, w.Analysis.Phase, w.Analysis.Message)
		time.Sleep(tick)
	}
	for target := range callsFor(t, good) {
		require.True(t, strings.HasPrefix(target, "canary-"), "general target %s was called while canary waited", target)
	}
	before := metricRun(t, waveOf(t, ro, "canary"))
	require.Positive(t, before.Errors, "measurements while Prometheus was down were errors")

	f.prom.Start()
	restarted := time.Now()
	done := f.await(good, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	canary := waveOf(t, done, "canary")
	m := metricRun(t, canary)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Successful, int32(count))
	require.NotNil(t, canary.FinishedAt)
	report(t, "held %s with Prometheus down (successful=%d errors=%d then); canary passed %s after the restart; measurements successful=%d errors=%d inconclusive=%d",
		restarted.Sub(stopped).Round(100*time.Millisecond), before.Successful, before.Errors,
		canary.FinishedAt.Sub(restarted).Round(time.Second), m.Successful, m.Errors, m.Inconclusive)
	f.requireAllOn(good)
}
