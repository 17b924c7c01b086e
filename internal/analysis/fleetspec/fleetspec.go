// Package fleetspec translates between the FleetStage API and the analysis
// engine: the analysis a wave runs (spec.analysis, or the wave's override),
// its validation with field paths, and the run state a FleetRollout keeps
// in status. It is pure.
package fleetspec

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxReasonLength bounds a reason kept in status (the CRD's MaxLength).
const maxReasonLength = 1024

// maxTargetReasonLength bounds a target failure's reason in status.
const maxTargetReasonLength = 512

// ForWave returns the analysis the named wave runs: the wave's override
// when it has one (its unset timeouts taken from spec.analysis), else
// spec.analysis's metrics. It reports false when the wave runs none.
func ForWave(spec *fleetv1alpha1.FleetStageSpec, wave string) (analysis.Analysis, bool) {
	fa := spec.Analysis
	if fa == nil {
		return analysis.Analysis{}, false
	}
	a := analysis.Analysis{
		Metrics:               metrics(fa.Metrics),
		InconclusiveTimeout:   duration(fa.InconclusiveTimeout),
		OnInconclusiveTimeout: analysis.InconclusivePolicy(fa.OnInconclusiveTimeout),
	}
	for i := range spec.Waves {
		w := &spec.Waves[i]
		if w.Name != wave || w.Analysis == nil {
			continue
		}
		a.Metrics = metrics(w.Analysis.Metrics)
		if w.Analysis.InconclusiveTimeout != nil {
			a.InconclusiveTimeout = w.Analysis.InconclusiveTimeout.Duration
		}
		if w.Analysis.OnInconclusiveTimeout != "" {
			a.OnInconclusiveTimeout = analysis.InconclusivePolicy(w.Analysis.OnInconclusiveTimeout)
		}
	}
	return a, len(a.Metrics) > 0
}

// Validate returns every invalid field of spec.analysis and of the waves'
// overrides, with their full paths, e.g.
// `spec.waves[1].analysis.metrics[0].successCondition`. check may be nil.
func Validate(spec *fleetv1alpha1.FleetStageSpec, check analysis.QueryChecker) field.ErrorList {
	var errs field.ErrorList
	if fa := spec.Analysis; fa != nil {
		a := analysis.Analysis{
			Metrics:               metrics(fa.Metrics),
			InconclusiveTimeout:   duration(fa.InconclusiveTimeout),
			OnInconclusiveTimeout: analysis.InconclusivePolicy(fa.OnInconclusiveTimeout),
		}
		if len(a.Metrics) > 0 {
			// No metrics: no fleet-wide default, only Prometheus.
			errs = append(errs, a.Validate(field.NewPath("spec", "analysis"), check)...)
		}
	}
	for i := range spec.Waves {
		wa := spec.Waves[i].Analysis
		if wa == nil {
			continue
		}
		path := field.NewPath("spec", "waves").Index(i).Child("analysis")
		if spec.Analysis == nil && len(wa.Metrics) > 0 {
			errs = append(errs, field.Required(field.NewPath("spec", "analysis", "prometheus"),
				"spec.waves["+strconv.Itoa(i)+"].analysis has metrics: say where Prometheus is"))
		}
		a := analysis.Analysis{
			Metrics:               metrics(wa.Metrics),
			InconclusiveTimeout:   duration(wa.InconclusiveTimeout),
			OnInconclusiveTimeout: analysis.InconclusivePolicy(wa.OnInconclusiveTimeout),
		}
		if len(a.Metrics) > 0 {
			// No metrics: the wave runs no analysis.
			errs = append(errs, a.Validate(path, check)...)
		}
	}
	return errs
}

func metrics(in []fleetv1alpha1.AnalysisMetric) []analysis.Metric {
	if len(in) == 0 {
		return nil
	}
	out := make([]analysis.Metric, len(in))
	for i := range in {
		m := &in[i]
		out[i] = analysis.Metric{
			Name:              m.Name,
			Query:             m.Query,
			Interval:          duration(m.Interval),
			Count:             int(deref(m.Count)),
			FailureLimit:      int(deref(m.FailureLimit)),
			InconclusiveLimit: int(deref(m.InconclusiveLimit)),
			SuccessCondition:  m.SuccessCondition,
		}
		if pt := m.PerTarget; pt != nil {
			out[i].PerTarget = &analysis.PerTargetSpec{SeriesLabel: pt.SeriesLabel, TargetLabel: pt.TargetLabel}
		}
		if b := m.Baseline; b != nil {
			out[i].Baseline = &analysis.BaselineSpec{
				Query: b.Query, Direction: analysis.Direction(b.Direction),
				ConfidencePercent: int(deref(b.ConfidencePercent)), Step: duration(b.Step),
			}
		}
	}
	return out
}

// RunStates returns the run state of each metric of p from a wave's
// analysis status, in p's metric order. A metric status does not know
// (new, or renamed since) starts afresh at the analysis's start.
func RunStates(p *analysis.Program, st *fleetv1alpha1.WaveAnalysisStatus) []analysis.RunState {
	out := make([]analysis.RunState, len(p.Metrics()))
	for i, m := range p.Metrics() {
		out[i] = analysis.NewRunState(st.StartedAt.Time)
		for j := range st.Metrics {
			if st.Metrics[j].Name == m.Name() {
				out[i] = runState(st.StartedAt.Time, &st.Metrics[j])
			}
		}
	}
	return out
}

func runState(started time.Time, mr *fleetv1alpha1.MetricRun) analysis.RunState {
	s := analysis.RunState{
		Started:    started,
		Successful: int(mr.Successful), Failed: int(mr.Failed), Inconclusive: int(mr.Inconclusive), Errors: int(mr.Errors),
		Streak: int(mr.Streak),
	}
	if mr.StreakSince != nil {
		s.StreakSince = mr.StreakSince.Time
	}
	if l := mr.Last; l != nil {
		o := &analysis.Outcome{At: l.At.Time, Phase: analysis.Phase(l.Phase), Reason: l.Reason}
		if v, err := strconv.ParseFloat(l.Value, 64); err == nil && l.Value != "" {
			o.HasValue, o.Value = true, v
		}
		s.Last = o
	}
	for _, tf := range mr.TargetFailures {
		if s.TargetFailures == nil {
			s.TargetFailures, s.TargetReasons = map[string]int{}, map[string]string{}
		}
		s.TargetFailures[tf.Target] = int(tf.Failures)
		s.TargetReasons[tf.Target] = tf.Reason
	}
	return s
}

// Status returns the wave's analysis status for the metrics' run states
// and the decision on them.
func Status(p *analysis.Program, started time.Time, states []analysis.RunState,
	d analysis.WaveDecision) *fleetv1alpha1.WaveAnalysisStatus {
	st := &fleetv1alpha1.WaveAnalysisStatus{
		Phase:     fleetv1alpha1.AnalysisPhase(d.Phase),
		Message:   strutil.Ellipsis(d.Reason, maxReasonLength),
		StartedAt: metav1.NewTime(started),
	}
	if !d.NextMeasurement.IsZero() {
		t := metav1.NewTime(d.NextMeasurement)
		st.NextMeasurementAt = &t
	}
	for i, m := range p.Metrics() {
		mr := metricRun(m.Name(), states[i])
		if i < len(d.Metrics) {
			mr.Phase, mr.Reason = fleetv1alpha1.AnalysisPhase(d.Metrics[i].Phase), strutil.Ellipsis(d.Metrics[i].Reason, maxReasonLength)
		}
		st.Metrics = append(st.Metrics, mr)
	}
	return st
}

func metricRun(name string, s analysis.RunState) fleetv1alpha1.MetricRun {
	mr := fleetv1alpha1.MetricRun{
		Name:       name,
		Successful: int32(s.Successful), Failed: int32(s.Failed), Inconclusive: int32(s.Inconclusive), Errors: int32(s.Errors),
		Streak: int32(s.Streak),
	}
	if !s.StreakSince.IsZero() {
		t := metav1.NewTime(s.StreakSince)
		mr.StreakSince = &t
	}
	if l := s.Last; l != nil {
		mr.Last = &fleetv1alpha1.MeasurementRecord{
			At: metav1.NewTime(l.At), Phase: fleetv1alpha1.MeasurementPhase(l.Phase), Reason: strutil.Ellipsis(l.Reason, maxReasonLength),
		}
		if l.HasValue {
			mr.Last.Value = FormatValue(l.Value)
		}
	}
	// The targets with the most failures are the ones that decide; past
	// the bound, the others are dropped.
	targets := slices.SortedFunc(maps.Keys(s.TargetFailures), func(a, b string) int {
		return cmp.Or(cmp.Compare(s.TargetFailures[b], s.TargetFailures[a]), cmp.Compare(a, b))
	})
	for _, t := range targets[:min(len(targets), fleetv1alpha1.MaxAnalysisTargetFailures)] {
		mr.TargetFailures = append(mr.TargetFailures, fleetv1alpha1.TargetFailureCount{
			Target: t, Failures: int32(s.TargetFailures[t]), Reason: strutil.Ellipsis(s.TargetReasons[t], maxTargetReasonLength),
		})
	}
	slices.SortFunc(mr.TargetFailures, func(a, b fleetv1alpha1.TargetFailureCount) int { return cmp.Compare(a.Target, b.Target) })
	return mr
}

// FormatValue formats a measured value as status keeps it: Go's shortest
// decimal form, which parses back to the same float64.
func FormatValue(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func duration(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
