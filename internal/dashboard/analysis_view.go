package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/chart"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/promquery"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// plotPoints is how many samples per series a plot reads at most.
const plotPoints = 240

// Series classes of a plot: the page's style sheet colours them.
const (
	classWave     = "wave"
	classBaseline = "baseline"
)

// AnalysisView is a wave's analysis page: each metric plotted over the
// analysis for the wave's targets and for the baseline.
type AnalysisView struct {
	// Wave and Rollout name the wave and the forward rollout it belongs to.
	Wave, Rollout string
	// Analysis is the wave's analysis as `kargo-fleet status` shows it.
	Analysis report.WaveAnalysis
	// Start and End are the plotted window: the analysis's start to now,
	// or to its last measurement once it is over.
	Start, End time.Time
	// Step is the plots' resolution.
	Step time.Duration
	// Metrics are the metrics in spec order.
	Metrics []MetricPlot
}

// MetricPlot is one metric of the page.
type MetricPlot struct {
	report.MetricAnalysis
	// Query and BaselineQuery are the templates as written in the spec.
	Query, BaselineQuery string
	// Baseline says whether the metric compares with the baseline; a
	// plain metric's baseline line is its own query over the baseline
	// targets, for comparison only.
	Baseline bool
	// Queries are the rendered queries the plot reads; empty when they
	// cannot be rendered (Problem says why).
	Queries analysis.Queries
	// SVG is the plot, once drawn.
	SVG template.HTML
	// Problem says why there is no plot, or what is missing from it.
	Problem string
}

// analysisRollout returns the forward rollout whose wave analyses the page
// shows, with its plan snapshot: the shown rollout, or while a rollback
// runs, the rollout it rolls back.
func analysisRollout(in FleetInput) (*fleetv1alpha1.FleetRollout, *plan.WavePlan) {
	shown := ShownRollout(in.FleetStage, in.Rollouts)
	if shown == nil {
		return nil, nil
	}
	if shown.Spec.Direction != fleetv1alpha1.DirectionRollback {
		return shown, in.Plan
	}
	return rolledBack(shown, in.Rollouts), in.RolledBackPlan
}

// BuildAnalysis builds a wave's analysis page without its plots: the
// metrics with their rendered queries (the same templates and target sets
// the controller measures, the baseline as the targets not on the
// rollout's Freight now) and the window to plot. It reports false when
// the wave has no analysis that started.
func BuildAnalysis(in FleetInput, wave string) (AnalysisView, bool) {
	ro, snapshot := analysisRollout(in)
	if ro == nil {
		return AnalysisView{}, false
	}
	var st *fleetv1alpha1.WaveAnalysisStatus
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == wave {
			st = ro.Status.Waves[i].Analysis
		}
	}
	if st == nil {
		return AnalysisView{}, false
	}
	rep := report.Build(report.Input{FleetStage: in.FleetStage, Rollouts: []fleetv1alpha1.FleetRollout{*ro}})
	v := AnalysisView{Wave: wave, Rollout: ro.Name, Start: st.StartedAt.Time, End: in.Now}
	for _, a := range rep.Rollouts[0].Analyses {
		if a.Wave == wave {
			v.Analysis = a
		}
	}
	if st.NextMeasurementAt == nil {
		v.End = lastMeasurement(st, v.End)
	}
	if !v.End.After(v.Start) {
		v.End = v.Start.Add(time.Minute)
	}
	v.Step = promquery.RangeStep(v.Start, v.End, plotPoints)
	programs := plotPrograms(&in.FleetStage.Spec, wave)
	sets, setsProblem := plotTargets(in, ro, snapshot, wave)
	for _, m := range v.Analysis.Metrics {
		mp := MetricPlot{MetricAnalysis: m, Problem: setsProblem}
		if p := programs[m.Name]; p != nil {
			spec := p.Spec()
			mp.Query, mp.Baseline = spec.Query, spec.Baseline != nil && !p.onlyForPlot
			if spec.Baseline != nil {
				mp.BaselineQuery = spec.Baseline.Query
			}
			if setsProblem == "" {
				q, err := p.Render(sets)
				if err != nil {
					mp.Problem = err.Error()
				}
				mp.Queries = q
			}
		} else if mp.Problem == "" {
			mp.Problem = "the FleetStage's spec no longer has this metric"
		}
		v.Metrics = append(v.Metrics, mp)
	}
	return v, true
}

// lastMeasurement is when the latest measurement of an analysis was taken,
// or fallback when none was.
func lastMeasurement(st *fleetv1alpha1.WaveAnalysisStatus, fallback time.Time) time.Time {
	var last time.Time
	for _, m := range st.Metrics {
		if m.Last != nil && m.Last.At.After(last) {
			last = m.Last.At.Time
		}
	}
	if last.IsZero() {
		return fallback
	}
	return last
}

// plotTargets returns the target sets the queries are rendered with, as
// rollout.AnalysisTargets gives them to the controller, or why there are
// none.
func plotTargets(in FleetInput, ro *fleetv1alpha1.FleetRollout, snapshot *plan.WavePlan, wave string) (analysis.TargetSets, string) {
	if snapshot == nil {
		return analysis.TargetSets{}, "the rollout's plan snapshot cannot be read: the wave's targets are unknown"
	}
	obs := rollout.Observation{Plan: snapshot, Targets: map[string]rollout.TargetObservation{}}
	for i := range in.Stages {
		st := &in.Stages[i]
		if id := st.Labels[fleetv1alpha1.TargetLabel]; id != "" {
			obs.Targets[id] = rollout.TargetObservation{OnFreight: st.RunsFreight(ro.Spec.Freight.Name)}
		}
	}
	return rollout.AnalysisTargets(&obs, wave), ""
}

// plotPrograms compiles the analysis of a wave for plotting, by metric
// name. A plain metric (no baseline, not per target) gets the default
// baseline, its own query over the baseline targets, so its plot compares
// the wave with the rest of the fleet too.
func plotPrograms(spec *fleetv1alpha1.FleetStageSpec, wave string) map[string]*plotProgram {
	a, ok := fleetspec.ForWave(spec, wave)
	if !ok {
		return nil
	}
	out := map[string]*plotProgram{}
	for _, m := range a.Metrics {
		compared := m
		if m.Baseline == nil && m.PerTarget == nil {
			compared.Baseline = &analysis.BaselineSpec{}
		}
		if p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{compared}}); err == nil {
			out[m.Name] = &plotProgram{MetricProgram: p.Metrics()[0], onlyForPlot: m.Baseline == nil && compared.Baseline != nil}
			continue
		}
		if p, err := analysis.Compile(analysis.Analysis{Metrics: []analysis.Metric{m}}); err == nil {
			out[m.Name] = &plotProgram{MetricProgram: p.Metrics()[0]}
		}
	}
	return out
}

// plotProgram is a compiled metric as plotted.
type plotProgram struct {
	*analysis.MetricProgram
	// onlyForPlot says the baseline was added for the plot: the metric
	// itself does not compare.
	onlyForPlot bool
}

// plotSeries are the samples a plot draws.
type plotSeries struct {
	// Wave and Baseline are the series of each side.
	Wave, Baseline []promquery.TimeSeries
}

// drawPlot draws a metric's plot: each series of the wave's query as the
// "wave" line, each of the baseline query as the "baseline" line, and the
// last measurement as a dot coloured by its verdict.
func drawPlot(v *AnalysisView, m *MetricPlot, s plotSeries) template.HTML {
	c := chart.Chart{Title: fmt.Sprintf("%s: wave %s against the baseline", m.Name, v.Wave), Start: v.Start, End: v.End}
	add := func(name, class string, series []promquery.TimeSeries) {
		for _, ts := range series {
			pts := make([]chart.Point, len(ts.Points))
			for i, p := range ts.Points {
				pts[i] = chart.Point{T: p.T, V: p.V}
			}
			c.Series = append(c.Series, chart.Series{Name: name, Class: class, Points: pts})
		}
	}
	add("wave "+v.Wave, classWave, s.Wave)
	add("baseline", classBaseline, s.Baseline)
	if l := m.Last; l != nil {
		val := math.NaN()
		if f, err := strconv.ParseFloat(l.Value, 64); err == nil {
			val = f
		}
		label := string(l.Phase)
		if l.Reason != "" {
			label += ": " + l.Reason
		}
		c.Markers = append(c.Markers, chart.Marker{T: l.At.Time, V: val, Class: string(l.Phase), Label: label})
	}
	return template.HTML(chart.SVG(c)) //nolint:gosec // chart.SVG escapes every text it writes
}
