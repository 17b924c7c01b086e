//go:build integration

package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
)

// analysedFleet is a fleet of two waves, canary (two targets) gated on
// metrics and rest (one target), reading the Prometheus at address.
func analysedFleet(t *testing.T, ns, address string, fa fleetv1alpha1.FleetAnalysis,
	metrics ...fleetv1alpha1.AnalysisMetric) *fleet {
	t.Helper()
	fa.Prometheus = fleetv1alpha1.PrometheusSource{Address: address, Timeout: &metav1.Duration{Duration: time.Second}}
	return newFleet(t, ns, fleetSpec{
		targets: append(inline("canary", 2, map[string]string{"ring": "canary"}, nil),
			inline("rest", 1, map[string]string{"ring": "rest"}, nil)...),
		waves: []fleetv1alpha1.Wave{
			{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}},
				Analysis: &fleetv1alpha1.WaveAnalysis{Metrics: metrics}},
			{Name: "rest", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": "rest"}}},
		},
		analysis: &fa,
	})
}

// quickMetric measures every second, twice.
func quickMetric(name, query string) fleetv1alpha1.AnalysisMetric {
	return fleetv1alpha1.AnalysisMetric{Name: name, Query: query, SuccessCondition: "result < 0.01",
		Interval: &metav1.Duration{Duration: time.Second}, Count: ptr.To[int32](2)}
}

// awaitCanaryAnalysis waits until the canary wave's analysis of the
// forward rollout of freight satisfies ok, and returns the rollout.
func (f *fleet) awaitCanaryAnalysis(freight, what string,
	ok func(wp *fleetv1alpha1.WaveProgress) bool) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var ro *fleetv1alpha1.FleetRollout
	require.Eventually(f.t, func() bool {
		ro = f.findRollout(freight, fleetv1alpha1.DirectionForward)
		return ro != nil && len(ro.Status.Waves) > 0 && ro.Status.Waves[0].Analysis != nil && ok(&ro.Status.Waves[0])
	}, wait, tick, "the canary analysis of %s never %s (last: %s)", freight, what, describe(&ro))
	return ro
}

// requireHeldInCanary checks that the rollout has not let its Freight past
// the canary wave.
func (f *fleet) requireHeldInCanary(ro *fleetv1alpha1.FleetRollout, freight string) {
	f.t.Helper()
	require.NotEqual(f.t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	require.NotEqual(f.t, fleetv1alpha1.WaveSucceeded, ro.Status.Waves[0].Phase)
	require.Empty(f.t, f.promotionsOf(freight, "rest"), "no target of the next wave was asked to take the Freight")
}

// awaitCanaryHalt waits for the forward rollout of freight to end, and
// checks that it failed on the canary wave's analysis, the breach naming
// text, and that no target of the next wave was asked to take the Freight.
func (f *fleet) awaitCanaryHalt(freight, next, text string) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	ro := f.rollout(freight, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(f.t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	require.NotNil(f.t, breach)
	require.Equal(f.t, fleetv1alpha1.AnalysisFailedReason, breach.Reason)
	require.Contains(f.t, breach.Message, text)
	require.Equal(f.t, fleetv1alpha1.WaveFailed, ro.Status.Waves[0].Phase)
	require.Equal(f.t, fleetv1alpha1.AnalysisFailed, ro.Status.Waves[0].Analysis.Phase, ro.Status.Waves[0].Analysis.Message)
	require.Equal(f.t, fleetv1alpha1.WavePending, ro.Status.Waves[1].Phase)
	require.Empty(f.t, f.promotionsOf(freight, next), "no target of wave %s was asked to take the Freight", next)
	return ro
}

// TestWaveAnalysisPrometheusStopped gates a wave on a stopped Prometheus:
// the wave waits, Inconclusive with the reason, until the inconclusive
// timeout; then AskApproval holds it until `kargo approve` lets it go on,
// and Fail fails it.
func TestWaveAnalysisPrometheusStopped(t *testing.T) {
	prom := promtest.Start(t)
	prom.Stop()
	fa := func(policy fleetv1alpha1.InconclusivePolicy) fleetv1alpha1.FleetAnalysis {
		return fleetv1alpha1.FleetAnalysis{InconclusiveTimeout: &metav1.Duration{Duration: 6 * time.Second},
			OnInconclusiveTimeout: policy}
	}
	t.Run("AskApproval", func(t *testing.T) {
		t.Parallel()
		const ns = "analysis-down-ask"
		dumpPromotions(t, ns)
		f := analysedFleet(t, ns, prom.URL(), fa(fleetv1alpha1.InconclusiveAskApproval), quickMetric("error-ratio", errorRatioQuery(ns)))
		f.ship(f.good)
		ro := f.awaitCanaryAnalysis(f.good, "waited, inconclusive", func(wp *fleetv1alpha1.WaveProgress) bool {
			return wp.Analysis.Phase == fleetv1alpha1.AnalysisInconclusive
		})
		m := ro.Status.Waves[0].Analysis.Metrics[0]
		require.Contains(t, m.Reason, "Prometheus is unavailable", "the metric says why it waits")
		require.Contains(t, ro.Status.Waves[0].Waiting, "analysis inconclusive")
		require.Contains(t, ro.Status.Message, "Prometheus is unavailable", "the rollout says why it waits")
		f.requireHeldInCanary(ro, f.good)

		ro = f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
		require.Equal(t, fleetv1alpha1.RolloutWaitingForApproval, ro.Status.Phase, ro.Status.Message)
		canary := ro.Status.Waves[0]
		require.Equal(t, fleetv1alpha1.WaveWaitingForApproval, canary.Phase)
		require.Equal(t, fleetv1alpha1.AnalysisAskApproval, canary.Analysis.Phase, canary.Analysis.Message)
		require.Zero(t, canary.Analysis.Metrics[0].Successful)
		require.Contains(t, ro.Status.Message, kargo.ApproveCommand(ns, f.good, "fleet-canary"), "the rollout gives the command")
		f.requireHeldInCanary(ro, f.good)

		alice, _ := kargoPromoter(t, ns, "alice-"+ns)
		require.NoError(t, kargoAPI(t).Approve(context.Background(), alice, ns, "fleet-canary", f.good))
		ro = f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
		require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
		canary = ro.Status.Waves[0]
		require.Equal(t, fleetv1alpha1.AnalysisAskApproval, canary.Analysis.Phase, "the verdict stays what it was")
		require.Contains(t, canary.Analysis.Message, "approved for wave Stage fleet-canary at ")
		require.Zero(t, canary.Analysis.Metrics[0].Successful, "no measurement passed: the approval let the wave go on")
		for id, freight := range f.targetFreight() {
			require.Equal(t, f.good, freight, "target %s runs the approved Freight", id)
		}
	})
	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		const ns = "analysis-down-fail"
		dumpPromotions(t, ns)
		f := analysedFleet(t, ns, prom.URL(), fa(fleetv1alpha1.InconclusiveFail),
			quickMetric("error-ratio", errorRatioQuery(ns)))
		f.ship(f.good)
		ro := f.awaitCanaryHalt(f.good, "rest", "Prometheus is unavailable")
		require.Zero(t, ro.Status.Waves[0].Analysis.Metrics[0].Successful)
	})
}

// TestWaveAnalysisUnjudgeableResults gates a wave on queries Prometheus
// answers but that cannot be judged: several series where one was
// expected, an empty result, NaN and +Inf. None is counted; the wave waits
// until the inconclusive timeout fails it.
func TestWaveAnalysisUnjudgeableResults(t *testing.T) {
	const ns = "analysis-unjudgeable"
	dumpPromotions(t, ns)
	prom := startFleetPrometheus(t)
	ratio := errorRatioQuery(ns)
	wantReasons := map[string]string{
		"several-series": "the query returned 2 series where one was expected",
		"empty":          "no data: the query returned an empty result",
		"nan":            "no data: the value is NaN",
		"inf":            "the value is +Inf (a division by zero: no traffic?)",
	}
	f := analysedFleet(t, ns, prom.URL(),
		fleetv1alpha1.FleetAnalysis{InconclusiveTimeout: &metav1.Duration{Duration: 5 * time.Second}},
		quickMetric("several-series", errorRatioByTargetQuery(ns)),
		quickMetric("empty", fmt.Sprintf(`sum(rate(%s{project=%q, missing="label", cluster=~"{{targets.regex}}"}[%s]))`,
			kargosim.ServiceRequestsMetric, ns, rateWindow)),
		quickMetric("nan", "("+ratio+") * 0 / 0"),
		quickMetric("inf", "("+ratio+") / 0"),
	)
	awaitSeries(t, prom.URL(), fmt.Sprintf(`rate(%s{project=%q, code="500"}[%s])`, kargosim.ServiceRequestsMetric, ns, rateWindow), 3)
	f.ship(f.good)
	canary := f.awaitCanaryHalt(f.good, "rest", "no conclusive measurement").Status.Waves[0]
	require.Len(t, canary.Analysis.Metrics, len(wantReasons))
	for _, m := range canary.Analysis.Metrics {
		require.NotNil(t, m.Last, m.Name)
		require.Contains(t, m.Last.Reason, wantReasons[m.Name], m.Name)
		require.Zero(t, m.Successful+m.Failed, "%s: no measurement of it was conclusive", m.Name)
		require.Positive(t, m.Inconclusive+m.Errors, m.Name)
	}
	byName := map[string]fleetv1alpha1.MetricRun{}
	for _, m := range canary.Analysis.Metrics {
		byName[m.Name] = m
	}
	require.Equal(t, fleetv1alpha1.MeasurementPhase("Error"), byName["several-series"].Last.Phase)
	for _, name := range []string{"empty", "nan", "inf"} {
		require.Equal(t, fleetv1alpha1.MeasurementPhase("Inconclusive"), byName[name].Last.Phase, name)
	}
}

// awaitSeries waits until the query, at the Prometheus at address, holds
// n series: each measurement of the test then reads them.
func awaitSeries(t *testing.T, address, query string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
			address+"/api/v1/query?query="+url.QueryEscape("count("+query+")"), http.NoBody)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		var body struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		return json.NewDecoder(resp.Body).Decode(&body) == nil && len(body.Data.Result) == 1 &&
			body.Data.Result[0].Value[1] == strconv.Itoa(n)
	}, wait, tick, "Prometheus never held %d series of %s", n, query)
}

// faultyProxy sits between the controller and a real Prometheus and, by
// its mode, passes requests on, answers 503, or answers too late.
type faultyProxy struct {
	mode  atomic.Value // "pass", "503" or "slow"
	proxy *httputil.ReverseProxy
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p.mode.Load() {
	case "503":
		http.Error(w, "upstream overloaded", http.StatusServiceUnavailable)
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		http.Error(w, "too late", http.StatusGatewayTimeout)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// startFaultyProxy starts a faultyProxy in front of the Prometheus at
// target, in mode.
func startFaultyProxy(t *testing.T, target, mode string) (*faultyProxy, string) {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	p := &faultyProxy{proxy: httputil.NewSingleHostReverseProxy(u)}
	p.mode.Store(mode)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// TestWaveAnalysisPrometheusFaults gates a wave on a Prometheus that
// answers 503, then too slowly, then again: the wave waits, saying why,
// through both faults, and passes only after enough conclusive
// measurements once Prometheus answers.
func TestWaveAnalysisPrometheusFaults(t *testing.T) {
	const ns = "analysis-faults"
	dumpPromotions(t, ns)
	prom := startFleetPrometheus(t)
	proxy, address := startFaultyProxy(t, prom.URL(), "503")
	f := analysedFleet(t, ns, address,
		fleetv1alpha1.FleetAnalysis{InconclusiveTimeout: &metav1.Duration{Duration: 5 * time.Minute}},
		quickMetric("error-ratio", errorRatioQuery(ns)))
	f.ship(f.good)

	ro := f.awaitCanaryAnalysis(f.good, "named the 503", func(wp *fleetv1alpha1.WaveProgress) bool {
		l := wp.Analysis.Metrics[0].Last
		return l != nil && strings.Contains(l.Reason, "server error: 503")
	})
	require.Contains(t, ro.Status.Waves[0].Analysis.Metrics[0].Last.Reason, "Prometheus is unavailable")
	require.Equal(t, fleetv1alpha1.MeasurementPhase("Error"), ro.Status.Waves[0].Analysis.Metrics[0].Last.Phase)
	require.Zero(t, ro.Status.Waves[0].Analysis.Metrics[0].Successful)
	f.requireHeldInCanary(ro, f.good)

	proxy.mode.Store("slow")
	ro = f.awaitCanaryAnalysis(f.good, "named the timeout", func(wp *fleetv1alpha1.WaveProgress) bool {
		l := wp.Analysis.Metrics[0].Last
		return l != nil && strings.Contains(l.Reason, "Prometheus did not answer within 1s")
	})
	require.Zero(t, ro.Status.Waves[0].Analysis.Metrics[0].Successful)
	f.requireHeldInCanary(ro, f.good)

	proxy.mode.Store("pass")
	ro = f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	m := ro.Status.Waves[0].Analysis.Metrics[0]
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Errors, int32(2), "the 503 and the timeout were measured, as errors")
	require.GreaterOrEqual(t, m.Successful, int32(2), "the wave passed on conclusive measurements only")
	requireErrorRatioOf(t, m.Last.Value, goodErrorRatio, "the canary targets fail the good Freight's 0.1 % of requests")
}

// TestWaveAnalysisBaseline gates a canary wave on its error ratio against
// the targets the rollout has not reached: a fleet-wide incident raises
// both sides and does not fail a good Freight, while a bad Freight, which
// raises only the canary's targets, fails it. The canary's soak (1s) is
// shorter than its analysis (3 × 2s): the next wave takes the Freight only
// once the analysis is over.
func TestWaveAnalysisBaseline(t *testing.T) {
	const ns = "analysis-baseline"
	dumpPromotions(t, ns)
	prom := startFleetPrometheus(t)
	setIncident(t, incidentErrorRatio)
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	f := newFleet(t, ns, fleetSpec{
		targets: append(inline("canary", 2, map[string]string{"ring": "canary"}, nil),
			inline("general", 2, map[string]string{"ring": "general"}, nil)...),
		waves: []fleetv1alpha1.Wave{
			{Name: "canary", Selector: ring("canary"), Soak: &metav1.Duration{Duration: time.Second},
				Analysis: &fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{{
					Name:             "error-ratio",
					Query:            errorRatioByTargetQuery(ns),
					Interval:         &metav1.Duration{Duration: 2 * time.Second},
					Count:            ptr.To[int32](3),
					SuccessCondition: "result <= 1.2 * baseline",
					Baseline:         &fleetv1alpha1.BaselineAnalysis{},
				}}}},
			{Name: "general", Selector: ring("general")},
		},
		analysis: &fleetv1alpha1.FleetAnalysis{
			Prometheus: fleetv1alpha1.PrometheusSource{Address: prom.URL(), Timeout: &metav1.Duration{Duration: 5 * time.Second}},
		},
	})

	f.ship(f.good)
	good := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, good.Status.Phase, good.Status.Message)
	canary := good.Status.Waves[0]
	m := canary.Analysis.Metrics[0]
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	requireErrorRatioOf(t, m.Last.Value, goodErrorRatio+incidentErrorRatio, "the incident raised the canary's error ratio")
	require.Zero(t, m.Failed)
	analysisEnd := canary.Analysis.StartedAt.Add(3 * 2 * time.Second)
	require.False(t, canary.FinishedAt.Time.Before(analysisEnd), "the canary passed only after its analysis")
	general := f.promotionsOf(f.good, "general")
	require.NotEmpty(t, general)
	for _, p := range general {
		require.False(t, p.CreationTimestamp.Time.Before(analysisEnd.Truncate(time.Second)),
			"Promotion %s of the next wave was created before the canary's analysis was over", p.Name)
	}

	// The incident is over once every target's error ratio in Prometheus
	// is back to the good Freight's: the bad Freight's canary is compared
	// with a baseline the incident no longer raises.
	setIncident(t, 0)
	awaitSeries(t, prom.URL(), fmt.Sprintf("(%s) < %g", errorRatioOf(ns, ".+", " by (cluster)"), 2*goodErrorRatio), 4)
	f.ship(f.bad)
	bad := f.awaitCanaryHalt(f.bad, "general", "error-ratio")
	require.Positive(t, bad.Status.Waves[0].Analysis.Metrics[0].Failed)
}

// incidentErrorRatio is the share of requests a fleet-wide incident fails
// besides the Freight's.
const incidentErrorRatio = 0.05

// setIncident makes every target of the Kargo simulator fail ratio more of
// its requests, a fleet-wide incident, until the test ends or sets 0.
func setIncident(t *testing.T, ratio float64) {
	t.Helper()
	require.NoError(t, env.Simulator.SetServiceIncident(ratio))
	t.Cleanup(func() { _ = env.Simulator.SetServiceIncident(0) })
}
