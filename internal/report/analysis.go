package report

import (
	"cmp"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// WaveAnalysis is a wave's analysis as the report shows it: the run state
// the FleetRollout keeps, with each metric's success condition and count
// from the FleetStage's spec.
type WaveAnalysis struct {
	// Wave names the wave.
	Wave string `json:"wave"`
	// Phase and Message are where the analysis stands, and why.
	Phase   fleetv1alpha1.AnalysisPhase `json:"phase"`
	Message string                      `json:"message,omitempty"`
	// StartedAt is when the analysis started; NextMeasurementAt when the
	// next measurement is due (nil once it is over).
	StartedAt         metav1.Time  `json:"startedAt"`
	NextMeasurementAt *metav1.Time `json:"nextMeasurementAt,omitempty"`
	// Metrics are the metrics in spec order.
	Metrics []MetricAnalysis `json:"metrics"`
}

// MetricAnalysis is one metric of a wave's analysis.
type MetricAnalysis struct {
	// Name is the metric's name.
	Name string `json:"name"`
	// Condition is its success condition; empty when the FleetStage's spec
	// no longer has the metric.
	Condition string `json:"condition,omitempty"`
	// Count is the number of successful measurements it needs to pass
	// (zero when unknown).
	Count int `json:"count,omitempty"`
	// Phase and Reason are where its run stands, and why.
	Phase  fleetv1alpha1.AnalysisPhase `json:"phase"`
	Reason string                      `json:"reason,omitempty"`
	// Successful, Failed, Inconclusive and Errors count its measurements
	// by verdict.
	Successful   int32 `json:"successful"`
	Failed       int32 `json:"failed"`
	Inconclusive int32 `json:"inconclusive"`
	Errors       int32 `json:"errors"`
	// Last is the latest measurement.
	Last *fleetv1alpha1.MeasurementRecord `json:"last,omitempty"`
}

// buildAnalyses returns the analyses a rollout's waves recorded, in wave
// order, with each metric's condition from spec.
func buildAnalyses(spec *fleetv1alpha1.FleetStageSpec, waves []fleetv1alpha1.WaveProgress) []WaveAnalysis {
	var out []WaveAnalysis
	for i := range waves {
		st := waves[i].Analysis
		if st == nil {
			continue
		}
		specs := map[string]analysis.Metric{}
		if a, ok := fleetspec.ForWave(spec, waves[i].Name); ok {
			for _, m := range a.WithDefaults().Metrics {
				specs[m.Name] = m
			}
		}
		wa := WaveAnalysis{Wave: waves[i].Name, Phase: st.Phase, Message: st.Message, StartedAt: st.StartedAt,
			NextMeasurementAt: st.NextMeasurementAt, Metrics: make([]MetricAnalysis, 0, len(st.Metrics))}
		for _, mr := range st.Metrics {
			m := specs[mr.Name]
			wa.Metrics = append(wa.Metrics, MetricAnalysis{Name: mr.Name, Condition: m.SuccessCondition, Count: m.Count,
				Phase: mr.Phase, Reason: mr.Reason, Successful: mr.Successful, Failed: mr.Failed,
				Inconclusive: mr.Inconclusive, Errors: mr.Errors, Last: mr.Last})
		}
		out = append(out, wa)
	}
	return out
}

// analysis prints a wave's analysis under the wave's line: its phase, then
// each metric with its verdict, counts, last value and condition, and the
// reason of a metric that waits, failed or asks for approval.
func (t *textWriter) analysis(a *WaveAnalysis, indent string) {
	head := fmt.Sprintf("analysis %s, started %s ago", t.analysisPhase(string(a.Phase)),
		formatDuration(t.o.Now.Sub(a.StartedAt.Time)))
	if n := a.NextMeasurementAt; n != nil {
		head += ", next measurement in " + formatDuration(n.Sub(t.o.Now))
	}
	t.printf("%s%s\n", indent, head)
	nameWidth, phaseWidth := 0, 0
	for _, m := range a.Metrics {
		nameWidth = max(nameWidth, len(m.Name))
		phaseWidth = max(phaseWidth, len(m.Phase))
	}
	sub := indent + "    "
	for _, m := range a.Metrics {
		last := "no measurement yet"
		if m.Last != nil {
			last = "last " + cmp.Or(m.Last.Value, "no value") + " (" + string(m.Last.Phase) + ")"
		}
		line := fmt.Sprintf("%s  %s  %s  %s", indent, padRight(m.Name, nameWidth),
			t.analysisPhase(padRight(string(m.Phase), phaseWidth)), last)
		t.printf("%s\n", line)
		t.printf("%s%s\n", sub, counts(&m))
		if m.Condition != "" {
			t.printf("%scondition: %s\n", sub, strutil.OneLine(m.Condition))
		}
		if m.Reason != "" && m.Phase != fleetv1alpha1.AnalysisPassed && m.Phase != fleetv1alpha1.AnalysisMeasuring {
			t.printf("%s%s\n", sub, t.paint(colorCyan, reasonLabel(m.Phase)+strutil.OneLine(m.Reason)))
		}
	}
}

// counts says how many measurements of each verdict a metric took.
func counts(m *MetricAnalysis) string {
	s := fmt.Sprintf("%d", m.Successful)
	if m.Count > 0 {
		s += fmt.Sprintf("/%d", m.Count)
	}
	s += fmt.Sprintf(" successful, %d failed, %d inconclusive", m.Failed, m.Inconclusive)
	switch {
	case m.Errors == 1:
		s += ", 1 error"
	case m.Errors > 1:
		s += fmt.Sprintf(", %d errors", m.Errors)
	}
	return s
}

// reasonLabel introduces a metric's reason by what its phase means.
func reasonLabel(p fleetv1alpha1.AnalysisPhase) string {
	switch p {
	case fleetv1alpha1.AnalysisInconclusive:
		return "waiting: "
	case fleetv1alpha1.AnalysisAskApproval:
		return "asks for approval: "
	}
	return "why: "
}

// analysisPhase paints an analysis phase by what it means.
func (t *textWriter) analysisPhase(p string) string {
	switch fleetv1alpha1.AnalysisPhase(strings.TrimSpace(p)) {
	case fleetv1alpha1.AnalysisPassed:
		return t.paint(colorGreen, p)
	case fleetv1alpha1.AnalysisFailed:
		return t.paint(colorRed, p)
	case fleetv1alpha1.AnalysisMeasuring:
		return t.paint(colorYellow, p)
	}
	return t.paint(colorCyan, p)
}
