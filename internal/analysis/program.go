package analysis

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidError is returned by Compile for an analysis that cannot run. It
// is terminal: retrying cannot help until the spec changes.
type InvalidError struct {
	// Errors names every invalid field.
	Errors field.ErrorList
}

// Error implements error.
func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid wave analysis: %v", e.Errors.ToAggregate())
}

// Program is a compiled wave analysis: templates parsed and conditions
// compiled once. It is immutable and safe for concurrent use.
type Program struct {
	analysis Analysis
	metrics  []*MetricProgram
}

// MetricProgram is one compiled metric.
type MetricProgram struct {
	spec          Metric
	query         *Template
	baselineQuery *Template
	cond          *condition
	timeout       time.Duration
	onTimeout     InconclusivePolicy
}

// Compile validates a and compiles it. The error is an *InvalidError.
func Compile(a Analysis) (*Program, error) {
	p, errs := compile(a, nil, nil)
	if len(errs) > 0 {
		return nil, &InvalidError{Errors: errs}
	}
	return p, nil
}

// Analysis returns the analysis the program runs, defaults applied.
func (p *Program) Analysis() Analysis { return p.analysis }

// Metrics returns the compiled metrics in spec order.
func (p *Program) Metrics() []*MetricProgram { return p.metrics }

// Duration is how long the analysis measures at the least; see
// Analysis.Duration.
func (p *Program) Duration() time.Duration { return p.analysis.Duration() }

// Spec returns the metric, defaults applied.
func (m *MetricProgram) Spec() Metric { return m.spec }

// Name returns the metric's name.
func (m *MetricProgram) Name() string { return m.spec.Name }

// Duration is Interval × Count.
func (m *MetricProgram) Duration() time.Duration { return m.spec.Duration() }

// Queries are the rendered PromQL of one measurement.
type Queries struct {
	// Targets is the query over the wave's targets.
	Targets string
	// Baseline is the query over the baseline targets; empty unless the
	// metric has a baseline.
	Baseline string
}

// Render renders the metric's queries for the given targets. With an empty
// set where a placeholder needs one, the error wraps ErrNoTargets: for a
// baseline metric in the last wave there is no baseline left.
func (m *MetricProgram) Render(sets TargetSets) (Queries, error) {
	var q Queries
	var err error
	if q.Targets, err = m.query.Render(sets); err != nil {
		return Queries{}, fmt.Errorf("error rendering the query of metric %q: %w", m.spec.Name, err)
	}
	if m.spec.Baseline == nil {
		return q, nil
	}
	baselineSets := sets
	if m.spec.Baseline.Query == "" {
		baselineSets = sets.swapped()
	}
	if q.Baseline, err = m.baselineQuery.Render(baselineSets); err != nil {
		return Queries{}, fmt.Errorf("error rendering the baseline query of metric %q: %w", m.spec.Name, err)
	}
	return q, nil
}

// Window is what a measurement reads: an instant (Step zero) or a range.
type Window struct {
	// Start is the start of a range; equal to End for an instant.
	Start time.Time
	// End is the instant, or the end of a range.
	End time.Time
	// Step is the resolution of a range; zero for an instant query.
	Step time.Duration
}

// Window returns what a measurement taken at `at` reads: a baseline metric
// reads the samples of the interval before it on both sides (so both sides
// cover the same window); other metrics read the instant `at`, their query
// choosing its own range (`rate(...[5m])`).
func (m *MetricProgram) Window(at time.Time) Window {
	if m.spec.Baseline == nil {
		return Window{Start: at, End: at}
	}
	return Window{Start: at.Add(-m.spec.Interval), End: at, Step: m.spec.Baseline.Step}
}
