package fleetrollouts

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// analysisMetrics are the Prometheus metrics of wave analyses. Their labels
// are bounded by the FleetStages, their waves and their metrics (at most
// 10 per wave): no target, rollout or Freight names.
type analysisMetrics struct {
	measurements *prometheus.CounterVec
	runs         *prometheus.CounterVec
	queries      *prometheus.HistogramVec
}

func newAnalysisMetrics() analysisMetrics {
	return analysisMetrics{
		measurements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_analysis_measurements_total",
			Help: "Measurements of wave analysis metrics, by verdict (Successful, Failed, Inconclusive, Error).",
		}, []string{"namespace", "fleetstage", "wave", "metric", "phase"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kargo_fleet_analysis_runs_total",
			Help: "Runs of wave analysis metrics that concluded, by phase (Passed, Failed, AskApproval).",
		}, []string{"namespace", "fleetstage", "wave", "metric", "phase"}),
		queries: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kargo_fleet_analysis_query_duration_seconds",
			Help:    "Time Prometheus took to answer a query of a wave analysis, by kind (instant, range) and outcome (ok, Unavailable, Invalid).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}, []string{"namespace", "fleetstage", "kind", "outcome"}),
	}
}

func (m *analysisMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.measurements, m.runs, m.queries}
}

// queryObserver returns what times the queries of one FleetStage's
// Prometheus client.
func (m *analysisMetrics) queryObserver(namespace, fleetStage string) func(string, time.Duration, string) {
	return func(kind string, took time.Duration, outcome string) {
		m.queries.WithLabelValues(namespace, fleetStage, kind, outcome).Observe(took.Seconds())
	}
}

// phaseCount is how many measurements of a metric's run had a verdict.
type phaseCount struct {
	phase analysis.Phase
	n     int32
}

// measurementPhases returns the measurement counts of a metric's run with
// their verdicts.
func measurementPhases(mr *fleetv1alpha1.MetricRun) [4]phaseCount {
	return [4]phaseCount{
		{analysis.PhaseSuccessful, mr.Successful}, {analysis.PhaseFailed, mr.Failed},
		{analysis.PhaseInconclusive, mr.Inconclusive}, {analysis.PhaseError, mr.Errors},
	}
}

// concluded reports whether a metric's run reached a verdict that a
// person or the rollout acts on.
func concluded(p fleetv1alpha1.AnalysisPhase) bool {
	return p == fleetv1alpha1.AnalysisPassed || p == fleetv1alpha1.AnalysisFailed || p == fleetv1alpha1.AnalysisAskApproval
}

// observeAnalysis counts the measurements written since before, and the
// metric runs that concluded since: it runs once the status it compares
// is written, so each measurement is counted once.
func (m *analysisMetrics) observeAnalysis(before *fleetv1alpha1.FleetRolloutStatus, ro *fleetv1alpha1.FleetRollout) {
	prev := map[string]*fleetv1alpha1.MetricRun{}
	for i := range before.Waves {
		if a := before.Waves[i].Analysis; a != nil {
			for j := range a.Metrics {
				prev[before.Waves[i].Name+"/"+a.Metrics[j].Name] = &a.Metrics[j]
			}
		}
	}
	for i := range ro.Status.Waves {
		w := &ro.Status.Waves[i]
		if w.Analysis == nil {
			continue
		}
		for j := range w.Analysis.Metrics {
			mr := &w.Analysis.Metrics[j]
			old := prev[w.Name+"/"+mr.Name]
			if old == nil {
				old = &fleetv1alpha1.MetricRun{}
			}
			was := measurementPhases(old)
			for k, c := range measurementPhases(mr) {
				if d := c.n - was[k].n; d > 0 {
					m.measurements.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, w.Name, mr.Name, string(c.phase)).Add(float64(d))
				}
			}
			if concluded(mr.Phase) && mr.Phase != old.Phase {
				m.runs.WithLabelValues(ro.Namespace, ro.Spec.FleetStage, w.Name, mr.Name, string(mr.Phase)).Inc()
			}
		}
	}
}
