package analysis

import (
	"fmt"
	"time"
)

// ValueKind is the shape of a query result.
type ValueKind string

const (
	// KindScalar is a scalar: one value, no labels.
	KindScalar ValueKind = "Scalar"
	// KindVector is an instant vector: one value per series.
	KindVector ValueKind = "Vector"
	// KindMatrix is a range vector: the samples of each series over a window.
	KindMatrix ValueKind = "Matrix"
)

// Value is the result of one query.
type Value struct {
	// Kind is the shape of the result.
	Kind ValueKind
	// Series are the result's series, in the order Prometheus returned them.
	Series []Series
	// Warnings are Prometheus's warnings about the result (partial data,
	// a function applied to the wrong metric type).
	Warnings []string
}

// Series is one series of a result.
type Series struct {
	// Labels are the series' labels.
	Labels map[string]string
	// Values holds one value for a scalar or a vector, and the samples of
	// the window, oldest first, for a matrix.
	Values []float64
}

// Measurement is what the caller fetched for one measurement of a metric.
type Measurement struct {
	// At is when the measurement was taken: the end of its window.
	At time.Time
	// Result is the query over the wave's targets.
	Result Value
	// Baseline is the query over the baseline targets (baseline metrics).
	Baseline Value
	// Err is set when the measurement could not be taken; a *QueryError
	// says whether the query or Prometheus was at fault.
	Err error
}

// QueryErrorKind classifies why a query failed.
type QueryErrorKind string

const (
	// QueryUnavailable means Prometheus was unreachable, slow, overloaded or
	// refused the credentials; the same query may work later.
	QueryUnavailable QueryErrorKind = "Unavailable"
	// QueryInvalid means Prometheus refused the query itself (a parse error, a
	// query it cannot execute); it fails until the spec changes.
	QueryInvalid QueryErrorKind = "Invalid"
)

// QueryError is a failed query.
type QueryError struct {
	// Kind says whose fault it was.
	Kind QueryErrorKind
	// Message is what Prometheus or the connection said.
	Message string
}

// Error implements error.
func (e *QueryError) Error() string {
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// Phase is the verdict on one measurement (or on one target in it).
type Phase string

const (
	// PhaseSuccessful means the success condition held.
	PhaseSuccessful Phase = "Successful"
	// PhaseFailed means the success condition did not hold (for a baseline
	// metric: and the difference is significant).
	PhaseFailed Phase = "Failed"
	// PhaseInconclusive means there was nothing to judge (no data, NaN, Inf, too
	// few samples).
	PhaseInconclusive Phase = "Inconclusive"
	// PhaseError means the measurement could not be taken or judged (Prometheus
	// unreachable, a query it refused, a result of the wrong shape).
	PhaseError Phase = "Error"
)

// conclusive reports whether the phase counts as one of a metric's
// measurements.
func (p Phase) conclusive() bool {
	return p == PhaseSuccessful || p == PhaseFailed
}

// Outcome is the verdict on one measurement.
type Outcome struct {
	// At is when the measurement was taken.
	At time.Time
	// Phase is the verdict.
	Phase Phase
	// HasValue says whether Value holds the measured value.
	HasValue bool
	// Value is the measured value: the single result, or for a baseline
	// metric the mean of the wave's samples. Never NaN or Inf.
	Value float64
	// Comparison is set for a baseline metric that had data on both sides.
	Comparison *Comparison
	// Reason says why, with the value, for status and Events.
	Reason string
	// Targets are the per-target verdicts of a per-target metric, sorted by
	// target id.
	Targets []TargetOutcome
}

// TargetOutcome is the verdict on one target in a measurement of a
// per-target metric.
type TargetOutcome struct {
	// Target is the target's id.
	Target string
	// Phase is the verdict.
	Phase Phase
	// HasValue says whether Value holds the target's value.
	HasValue bool
	// Value is the target's value. Never NaN or Inf.
	Value float64
	// Reason says why, with the value.
	Reason string
}
