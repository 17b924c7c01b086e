//go:build e2eargocd

package e2eargocd_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/analysistest"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil/promtest"
	"github.com/kargo-fleet/kargo-fleet/internal/traffic"
)

// laneRequests is the counter of the lane's traffic exporter.
var laneRequests = analysistest.Counter{Name: "lane_requests_total", Label: "target"}

// Error ratios of the lane's revisions (the errorRatio of the web-config
// ConfigMap up.sh writes), and the fleet-wide incident.
const (
	goodErrorRatio     = 0.01
	incidentErrorRatio = 0.2
)

// destTraffic is the fleet's service traffic as the destination clusters
// run it: at every scrape it reads each target's web-config ConfigMap on
// its destination cluster, which only Argo CD writes, and counts 100
// requests per second for every target that runs one, failing the share
// its errorRatio says plus the incident. The error rate of a target
// follows the revision Argo CD really applied there.
type destTraffic struct {
	desc *prometheus.Desc

	mu       sync.Mutex
	targets  []target
	incident float64
	meter    *traffic.Meter[string]
	// last is each target's ratio as last read: a failed read keeps it, so
	// one slow API call does not reset a counter.
	last map[string]float64
}

// startAnalysisPrometheus serves the fleet's traffic and starts a real
// Prometheus scraping it every second.
func startAnalysisPrometheus(t *testing.T) (*destTraffic, *promtest.Server) {
	t.Helper()
	d := &destTraffic{meter: traffic.NewMeter[string](100), last: map[string]float64{},
		desc: prometheus.NewDesc(laneRequests.Name, "Requests a target of the lane's fleet served, by status code.",
			[]string{laneRequests.Label, "code"}, nil)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(d)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return d, promtest.Start(t, strings.TrimPrefix(srv.URL, "http://"))
}

// serve makes the exporter count targets' traffic.
func (d *destTraffic) serve(targets []target) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.targets = append([]target(nil), targets...)
}

func (d *destTraffic) setIncident(ratio float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.incident = ratio
}

// Describe implements prometheus.Collector.
func (d *destTraffic) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector.
func (d *destTraffic) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	d.mu.Lock()
	targets := d.targets
	d.mu.Unlock()
	read := map[string]float64{}
	for _, tg := range targets {
		cm := &corev1.ConfigMap{}
		if err := clusters[tg.cluster].Get(ctx, client.ObjectKey{Namespace: tg.destNS, Name: "web-config"}, cm); err != nil {
			continue
		}
		if r, err := strconv.ParseFloat(cm.Data["errorRatio"], 64); err == nil {
			read[tg.id] = r
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, r := range read {
		d.last[id] = r
	}
	ratios := make(map[string]float64, len(d.last))
	ids := make([]string, 0, len(d.last))
	for id, r := range d.last {
		ratios[id] = traffic.ErrorRatio(r, d.incident)
		ids = append(ids, id)
	}
	d.meter.Advance(time.Now(), ratios)
	slices.Sort(ids)
	for _, id := range ids {
		c, _ := d.meter.Counts(id)
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, c.OK, id, "200")
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.CounterValue, c.Failed, id, "500")
	}
}

// analysisArgoFleet is a fleet of 8 targets (2 namespaces on each lane
// cluster): canary, the canary tier's 2, and general, the other 6; its
// FleetStage reads a Prometheus of its own scraping destTraffic.
type analysisArgoFleet struct {
	*argoFleet
	traffic *destTraffic
	prom    *promtest.Server
}

func newAnalysisArgoFleet(t *testing.T, prefix string, metrics []fleetv1alpha1.AnalysisMetric,
	canary *fleetv1alpha1.WaveAnalysis) *analysisArgoFleet {
	t.Helper()
	a := &analysisArgoFleet{}
	// The Prometheus is up before the FleetStage names it; the exporter
	// serves the fleet's targets once they are known.
	a.traffic, a.prom = startAnalysisPrometheus(t)
	a.argoFleet = newArgoFleet(t, prefix, fleetOptions{
		namespaces: 2,
		ring: func(tg target) string {
			if tg.labels["tier"] == "canary" {
				return "canary"
			}
			return "general"
		},
		waves: []fleetv1alpha1.Wave{
			{Name: "canary", Selector: ring("canary"), MaxConcurrent: all(), Analysis: canary},
			{Name: "general", Selector: ring("general"), MaxConcurrent: all()},
		},
		policy: fleetv1alpha1.FleetPolicy{Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}},
		analysis: &fleetv1alpha1.FleetAnalysis{
			Prometheus: fleetv1alpha1.PrometheusSource{Address: a.prom.URL(), Timeout: &metav1.Duration{Duration: 3 * time.Second}},
			Metrics:    metrics,
		},
	})
	a.traffic.serve(a.targets)
	return a
}

func (a *analysisArgoFleet) key() client.ObjectKey {
	return client.ObjectKey{Namespace: a.ns, Name: fleetName}
}

func (a *analysisArgoFleet) waveStageDescription(wave string) string {
	return analysistest.WaveStageDescription(hub, a.key(), wave)
}

// ringOf returns the ids of the targets of ring r.
func (a *analysisArgoFleet) ringOf(r string) []string {
	var out []string
	for _, tg := range a.targets {
		if tg.labels["ring"] == r {
			out = append(out, tg.id)
		}
	}
	return out
}

// tookRevision returns the targets whose Application the suite saw pinned
// to rev (Kargo's argocd-update sets targetRevision to the commit) since
// start. The synced revision does not tell: Argo CD compares an Application
// nobody synced yet with the revision its ApplicationSet gave it.
func (a *analysisArgoFleet) tookRevision(rev string, since time.Time) []string {
	var out []string
	for _, tg := range a.targets {
		if _, ok := a.w.firstAt(tg.app, since, func(s appState) bool { return s.targetRevision == rev }); ok {
			out = append(out, tg.id)
		}
	}
	return out
}

// TestArgoCDWaveAnalysisGatesErroringFreight: the error rate of every
// target is what the revision Argo CD applied on its destination cluster
// says, read through a real Prometheus. v1 (1 % errors) passes the
// FleetStage's analysis in both waves; the errors revision is Synced and
// Healthy in Argo CD but fails 30 % of its requests: the canary wave's
// baseline metric fails it within interval × (failure limit + 1) + one
// interval of its analysis start, no general Application takes it, and
// the automatic rollback returns every destination to v1.
func TestArgoCDWaveAnalysisGatesErroringFreight(t *testing.T) {
	scenario(t)
	const count = 3
	f := newAnalysisArgoFleet(t, "analysis-gate", []fleetv1alpha1.AnalysisMetric{laneRequests.ErrorRatioMetric(count)}, nil)
	f.newFreight("v1")
	start := time.Now()
	f.promote("v1", "canary")
	ro := f.await("v1", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	for _, w := range ro.Status.Waves {
		report(t, "v1 targets=%d %s", len(f.ringOf(w.Name)), analysistest.RequirePassed(t, w, count, goodErrorRatio))
	}
	f.eventually(func() bool { return strings.Contains(f.waveStageDescription("general"), "Analysis: Passed") },
		"the general wave Stage's description never said the analysis passed")
	f.requireDeployed("v1", nil)
	report(t, "v1 through canary and general with their analyses in %s", round(time.Since(start)))

	// The baseline is the fleet on v1: the canary wave now compares with it.
	analysistest.SetWaveAnalysis(t, hub, f.key(), cfg.timeout, "canary", laneRequests.ErrorRatioVsFleetMetric())
	f.newFreight("errors")
	start = time.Now()
	f.promote("errors", "canary")
	bad := f.await("errors", forward, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, bad.Status.Phase, bad.Status.Message)
	failedSeen := time.Since(start)
	report(t, "errors: %s; promote->failed %s", analysistest.RequireFailedOnBaseline(t, bad, "canary", "general"), round(failedSeen))
	canary := analysistest.MetricRun(t, analysistest.WaveOf(t, bad, "canary"))
	wave, baseline := analysistest.BaselineSides(t, canary.Last.Reason)
	require.Greater(t, wave, 0.2, "the canary targets run the errors revision: %s", canary.Last.Reason)
	require.Less(t, baseline, 0.05, "the baseline runs v1: %s", canary.Last.Reason)
	tookErrors := f.tookRevision(f.revs["errors"], start)
	require.ElementsMatch(t, f.ringOf("canary"), tookErrors, "only the canary Applications took the errors revision")

	rb := f.await("v1", rollback, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetrollout.RollbackName(bad.Name), rb.Name)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	f.requireDeployed("v1", nil)
	report(t, "errors: promote->every destination back on v1 %s", round(time.Since(start)))
}

// TestArgoCDWaveAnalysisBaselineIgnoresGlobalIncident: a fleet-wide
// incident raises every target's error rate while v2 goes through canary;
// the canary's baseline metric compares it with the general targets on
// v1, which suffer as much, and v2 passes: no rollback.
func TestArgoCDWaveAnalysisBaselineIgnoresGlobalIncident(t *testing.T) {
	scenario(t)
	f := newAnalysisArgoFleet(t, "analysis-incident", nil, nil)
	f.newFreight("v1")
	f.promote("v1", "canary")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded,
		f.await("v1", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed).Status.Phase)
	analysistest.SetWaveAnalysis(t, hub, f.key(), cfg.timeout, "canary", laneRequests.ErrorRatioVsFleetMetric())

	f.traffic.setIncident(incidentErrorRatio)
	incident := time.Now()
	f.newFreight("v2")
	f.promote("v2", "canary")
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.rollout(f.freight["v2"], forward)
		w, ok := analysistest.FindWave(ro, "canary")
		return ok && (ro.Status.Phase.IsFinal() || w.Phase == fleetv1alpha1.WaveSucceeded)
	}, "the canary wave of v2 never finished")
	f.traffic.setIncident(0)
	report(t, "incident lasted %s, until the canary wave ended", round(time.Since(incident)))
	report(t, "%s", analysistest.RequirePassedUnderIncident(t, ro, "canary"))

	done := f.await("v2", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.Nil(t, f.rollout(f.freight["v1"], rollback), "nothing was rolled back")
	f.requireDeployed("v2", nil)
}

// TestArgoCDWaveAnalysisWaitsWhilePrometheusIsDown: Prometheus stops while
// the canary wave is measured; the analysis turns Inconclusive and says so
// in the rollout and on the wave Stage, the wave holds longer than its
// analysis would have taken and no general Application is touched;
// restarted, Prometheus lets the wave pass and the rollout succeed.
func TestArgoCDWaveAnalysisWaitsWhilePrometheusIsDown(t *testing.T) {
	scenario(t)
	const count = 4
	f := newAnalysisArgoFleet(t, "analysis-promdown", nil,
		&fleetv1alpha1.WaveAnalysis{Metrics: []fleetv1alpha1.AnalysisMetric{laneRequests.ErrorRatioMetric(count)}})
	f.newFreight("v1")
	start := time.Now()
	f.promote("v1", "canary")
	f.eventually(func() bool {
		w, ok := analysistest.FindWave(f.rollout(f.freight["v1"], forward), "canary")
		return ok && w.Analysis != nil && len(w.Analysis.Metrics) == 1 && w.Analysis.Metrics[0].Successful >= 1
	}, "the canary wave's analysis never took a successful measurement")

	f.prom.Stop()
	stopped := time.Now()
	var ro *fleetv1alpha1.FleetRollout
	f.eventually(func() bool {
		ro = f.rollout(f.freight["v1"], forward)
		w, ok := analysistest.FindWave(ro, "canary")
		return ok && w.Analysis != nil && w.Analysis.Phase == fleetv1alpha1.AnalysisInconclusive &&
			strings.Contains(w.Analysis.Message, "Prometheus is unavailable")
	}, "the canary analysis never said Prometheus is unavailable")
	inconclusiveAfter := time.Since(stopped)
	require.Contains(t, ro.Status.Message, "wave canary: analysis inconclusive")
	f.eventually(func() bool { return strings.Contains(f.waveStageDescription("canary"), "Analysis: Inconclusive") },
		"the canary wave Stage's description never said the analysis waits")
	report(t, "inconclusive %s after Prometheus stopped: %s", round(inconclusiveAfter), analysistest.WaveOf(t, ro, "canary").Waiting)

	hold := analysistest.Interval*count + analysistest.Interval
	for time.Since(stopped) < hold {
		ro = f.rollout(f.freight["v1"], forward)
		w := analysistest.WaveOf(t, ro, "canary")
		require.Equal(t, fleetv1alpha1.RolloutProgressing, ro.Status.Phase, ro.Status.Message)
		require.Equal(t, fleetv1alpha1.WaveProgressing, w.Phase, w.Waiting)
		require.NotEqual(t, fleetv1alpha1.AnalysisPassed, w.Analysis.Phase, w.Analysis.Message)
		time.Sleep(tick)
	}
	require.ElementsMatch(t, f.ringOf("canary"), f.tookRevision(f.revs["v1"], start),
		"only the canary Applications took v1 while the canary wave waited")
	before := analysistest.MetricRun(t, analysistest.WaveOf(t, ro, "canary"))
	require.Positive(t, before.Errors, "measurements while Prometheus was down were errors")

	f.prom.Start()
	restarted := time.Now()
	done := f.await("v1", forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	canary := analysistest.WaveOf(t, done, "canary")
	m := analysistest.MetricRun(t, canary)
	require.Equal(t, fleetv1alpha1.AnalysisPassed, m.Phase, m.Reason)
	require.GreaterOrEqual(t, m.Successful, int32(count))
	report(t, "held %s with Prometheus down (successful=%d errors=%d then); canary passed %s after the restart; successful=%d errors=%d inconclusive=%d",
		round(restarted.Sub(stopped)), before.Successful, before.Errors, round(canary.FinishedAt.Sub(restarted)),
		m.Successful, m.Errors, m.Inconclusive)
	f.requireDeployed("v1", nil)
}
