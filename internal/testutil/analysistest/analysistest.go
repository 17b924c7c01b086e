// Package analysistest holds what the end-to-end suites' wave analysis
// scenarios share: the error-ratio metrics they gate waves on and the
// readings of a rollout's analysis status.
package analysistest

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
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
)

// Interval is every metric's interval, and the rate window of the queries:
// one interval of traffic per measurement.
const Interval = 5 * time.Second

// Counter names a request counter labelled code="200"|"500" and with the
// target's id in Label.
type Counter struct {
	Name, Label string
}

// ErrorRatioQuery is the error ratio of the wave's targets as one value.
func (c Counter) ErrorRatioQuery() string {
	return fmt.Sprintf(`sum(rate(%[1]s{code="500", %[2]s=~"{{targets.regex}}"}[%[3]s]))
/ sum(rate(%[1]s{%[2]s=~"{{targets.regex}}"}[%[3]s]))`, c.Name, c.Label, window())
}

// ErrorRatioByTargetQuery is the error ratio of each of the wave's targets:
// a baseline metric pools each side's series.
func (c Counter) ErrorRatioByTargetQuery() string {
	return fmt.Sprintf(`sum by (%[2]s) (rate(%[1]s{code="500", %[2]s=~"{{targets.regex}}"}[%[3]s]))
/ sum by (%[2]s) (rate(%[1]s{%[2]s=~"{{targets.regex}}"}[%[3]s]))`, c.Name, c.Label, window())
}

func window() string { return strconv.Itoa(int(Interval.Seconds())) + "s" }

// ErrorRatioMetric passes a wave whose error ratio stays below 5 % for
// count measurements.
func (c Counter) ErrorRatioMetric(count int32) fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{
		Name:             "error-ratio",
		Query:            c.ErrorRatioQuery(),
		Interval:         &metav1.Duration{Duration: Interval},
		Count:            ptr.To(count),
		SuccessCondition: "result < 0.05",
	}
}

// VsFleetFailureLimit is the failure limit of ErrorRatioVsFleetMetric.
const VsFleetFailureLimit = 1

// ErrorRatioVsFleetMetric fails a wave whose targets' error ratio is more
// than 1.5 times the baseline's (and above 2 %), significantly.
func (c Counter) ErrorRatioVsFleetMetric() fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{
		Name:             "error-ratio-vs-fleet",
		Query:            c.ErrorRatioByTargetQuery(),
		Interval:         &metav1.Duration{Duration: Interval},
		Count:            ptr.To[int32](4),
		FailureLimit:     ptr.To[int32](VsFleetFailureLimit),
		SuccessCondition: "result <= 1.5 * baseline || result < 0.02",
		Baseline:         &fleetv1alpha1.BaselineAnalysis{Direction: fleetv1alpha1.BaselineIncrease},
	}
}

// FailBound is how soon a wave failing every measurement of
// ErrorRatioVsFleetMetric must fail after its analysis started: interval ×
// (failure limit + 1), plus one interval.
const FailBound = Interval*(VsFleetFailureLimit+1) + Interval

// SetWaveAnalysis gives wave of the FleetStage key its own analysis and
// waits until the FleetStage controller is Ready with the change.
func SetWaveAnalysis(t *testing.T, c client.Client, key client.ObjectKey, timeout time.Duration, wave string,
	metrics ...fleetv1alpha1.AnalysisMetric) {
	t.Helper()
	ctx := context.Background()
	var generation int64
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fs := &fleetv1alpha1.FleetStage{}
		if err := c.Get(ctx, key, fs); err != nil {
			return err
		}
		found := false
		for i := range fs.Spec.Waves {
			if fs.Spec.Waves[i].Name == wave {
				fs.Spec.Waves[i].Analysis = &fleetv1alpha1.WaveAnalysis{Metrics: metrics}
				found = true
			}
		}
		require.True(t, found, "FleetStage %s has no wave %s", key, wave)
		err := c.Update(ctx, fs)
		generation = fs.Generation
		return err
	}))
	require.Eventually(t, func() bool {
		fs := &fleetv1alpha1.FleetStage{}
		if c.Get(ctx, key, fs) != nil {
			return false
		}
		ready := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= generation
	}, timeout, 200*time.Millisecond, "the FleetStage %s never became Ready with the analysis of wave %s", key, wave)
}

// FindWave returns the progress of wave in ro, if its status has it yet.
func FindWave(ro *fleetv1alpha1.FleetRollout, wave string) (fleetv1alpha1.WaveProgress, bool) {
	if ro != nil {
		for _, w := range ro.Status.Waves {
			if w.Name == wave {
				return w, true
			}
		}
	}
	return fleetv1alpha1.WaveProgress{}, false
}

// WaveOf returns the progress of wave in ro.
func WaveOf(t *testing.T, ro *fleetv1alpha1.FleetRollout, wave string) fleetv1alpha1.WaveProgress {
	t.Helper()
	w, ok := FindWave(ro, wave)
	require.True(t, ok, "no wave %s in rollout %s", wave, ro.Name)
	return w
}

// MetricRun returns the only metric run of a wave's analysis.
func MetricRun(t *testing.T, w fleetv1alpha1.WaveProgress) fleetv1alpha1.MetricRun {
	t.Helper()
	require.NotNil(t, w.Analysis, "wave %s ran an analysis", w.Name)
	require.Len(t, w.Analysis.Metrics, 1, "wave %s", w.Name)
	m := w.Analysis.Metrics[0]
	require.NotNil(t, m.Last, "metric %s of wave %s measured", m.Name, w.Name)
	return m
}

// AnalysisTook is how long the analysis of a finished wave ran.
func AnalysisTook(t *testing.T, w fleetv1alpha1.WaveProgress) time.Duration {
	t.Helper()
	require.NotNil(t, w.FinishedAt, "wave %s finished", w.Name)
	return w.FinishedAt.Sub(w.Analysis.StartedAt.Time)
}

// baselineReason matches the reason of a baseline measurement.
var baselineReason = regexp.MustCompile(`^wave (\S+) vs baseline (\S+):`)

// BaselineSides reads the wave's and the baseline's values out of the
// reason of a baseline measurement.
func BaselineSides(t *testing.T, reason string) (wave, baseline float64) {
	t.Helper()
	got := baselineReason.FindStringSubmatch(reason)
	require.NotNil(t, got, "a baseline measurement: %s", reason)
	wave, err := strconv.ParseFloat(got[1], 64)
	require.NoError(t, err)
	baseline, err = strconv.ParseFloat(got[2], 64)
	require.NoError(t, err)
	return wave, baseline
}

// WaveStageDescription returns the Kargo UI description of the wave Stage
// of wave in the FleetStage key ("" when it cannot be read).
func WaveStageDescription(c client.Reader, key client.ObjectKey, wave string) string {
	st := &kargo.Stage{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: key.Namespace, Name: render.WaveStageName(key.Name, wave)}, st); err != nil {
		return ""
	}
	return st.Annotations[kargo.DescriptionAnnotation]
}

// RequirePassed checks that wave w passed its only metric with at least
// count measurements, none failed, the last one reading ratio, and no
// sooner than interval × count after its analysis started. It returns a
// report of the wave's analysis.
func RequirePassed(t *testing.T, w fleetv1alpha1.WaveProgress, count int32, ratio float64) string {
	t.Helper()
	require.Equal(t, fleetv1alpha1.WaveSucceeded, w.Phase, w.Name)
	m := MetricRun(t, w)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, w.Analysis.Phase, w.Analysis.Message)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Successful, count, m.Reason)
	require.Zero(t, m.Failed, m.Reason)
	v, err := strconv.ParseFloat(m.Last.Value, 64)
	require.NoError(t, err, m.Last.Reason)
	require.InDelta(t, ratio, v, 0.002, "the analysis read the Freight's error ratio: %s", m.Last.Reason)
	took := AnalysisTook(t, w)
	require.GreaterOrEqual(t, took, Interval*time.Duration(count)-time.Second, "wave %s passed before interval × count", w.Name)
	return fmt.Sprintf("wave=%s analysis passed %s after it started (interval×count = %s); successful=%d inconclusive=%d errors=%d last=%q",
		w.Name, took, Interval*time.Duration(count), m.Successful, m.Inconclusive, m.Errors, m.Last.Reason)
}

// RequireFailedOnBaseline checks that wave of ro failed its
// ErrorRatioVsFleetMetric, significantly, within FailBound, that the
// rollout records the breach as AnalysisFailed and that wave next never
// started. It returns a report of the failure.
func RequireFailedOnBaseline(t *testing.T, ro *fleetv1alpha1.FleetRollout, wave, next string) string {
	t.Helper()
	require.Equal(t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	w := WaveOf(t, ro, wave)
	require.Equal(t, fleetv1alpha1.WaveFailed, w.Phase)
	m := MetricRun(t, w)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, w.Analysis.Phase, w.Analysis.Message)
	require.Equal(t, fleetv1alpha1.AnalysisFailed, m.Phase, m.Reason)
	require.Equal(t, int32(VsFleetFailureLimit+1), m.Failed, m.Reason)
	require.Contains(t, m.Last.Reason, "the difference is significant")
	breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(t, breach, "the breach is recorded")
	require.Equal(t, fleetv1alpha1.AnalysisFailedReason, breach.Reason)
	require.Contains(t, breach.Message, "wave "+wave+": analysis failed")
	require.Equal(t, fleetv1alpha1.WavePending, WaveOf(t, ro, next).Phase)
	took := AnalysisTook(t, w)
	report := fmt.Sprintf("wave %s failed %s after its analysis started (failing measurement %s after); bound interval×(failureLimit+1)+interval = %s; last: %s",
		wave, took, m.Last.At.Sub(w.Analysis.StartedAt.Time), FailBound, m.Last.Reason)
	require.LessOrEqual(t, took, FailBound, "the wave failed later than its bound: %s", report)
	return report
}

// RequirePassedUnderIncident checks that wave of ro passed its baseline
// metric with no failed measurement while both sides' error ratios were
// above 5 %. It returns a report.
func RequirePassedUnderIncident(t *testing.T, ro *fleetv1alpha1.FleetRollout, wave string) string {
	t.Helper()
	w := WaveOf(t, ro, wave)
	require.Equal(t, fleetv1alpha1.WaveSucceeded, w.Phase, ro.Status.Message)
	m := MetricRun(t, w)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.Zero(t, m.Failed, m.Reason)
	waveRatio, baseline := BaselineSides(t, m.Last.Reason)
	require.Greater(t, waveRatio, 0.05, "the wave's targets suffered the incident: %s", m.Last.Reason)
	require.Greater(t, baseline, 0.05, "the baseline suffered the incident: %s", m.Last.Reason)
	return fmt.Sprintf("%s passed %s after its analysis started, under the incident: measurements=%d failed=%d last=%q",
		wave, AnalysisTook(t, w), m.Successful+m.Failed+m.Inconclusive+m.Errors, m.Failed, m.Last.Reason)
}
