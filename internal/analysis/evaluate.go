package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Evaluate judges one measurement. wave are the wave's targets (used by
// per-target metrics, which name a verdict per target). It never panics and
// never returns Successful for a NaN, an Inf, an empty result or a result
// of the wrong shape.
func (m *MetricProgram) Evaluate(meas Measurement, wave []Target) Outcome {
	var o Outcome
	switch {
	case meas.Err != nil:
		o = errorOutcome(meas.Err)
	case m.spec.Baseline != nil:
		o = m.evaluateBaseline(meas)
	case m.spec.PerTarget != nil:
		o = m.evaluateTargets(meas, wave)
	default:
		o = m.evaluateSingle(meas.Result)
	}
	o.At = meas.At
	o.Reason = truncateReason(withWarnings(o.Reason, slices.Concat(meas.Result.Warnings, meas.Baseline.Warnings)))
	return o
}

// errorOutcome is the outcome of a measurement that could not be taken.
func errorOutcome(err error) Outcome {
	var qe *QueryError
	switch {
	case errors.As(err, &qe) && qe.Kind == QueryInvalid:
		return Outcome{Phase: PhaseError, Reason: "Prometheus refused the query: " + qe.Message}
	case errors.As(err, &qe):
		return Outcome{Phase: PhaseError, Reason: "Prometheus is unavailable: " + qe.Message}
	default:
		return Outcome{Phase: PhaseError, Reason: "error taking the measurement: " + err.Error()}
	}
}

// evaluateSingle judges a metric whose query returns one value.
func (m *MetricProgram) evaluateSingle(v Value) Outcome {
	switch len(v.Series) {
	case 0:
		return Outcome{Phase: PhaseInconclusive, Reason: "no data: the query returned an empty result"}
	case 1:
	default:
		names := make([]string, len(v.Series))
		for i, s := range v.Series {
			names[i] = formatLabels(s.Labels)
		}
		return Outcome{Phase: PhaseError, Reason: fmt.Sprintf(
			"the query returned %d series where one was expected (%s): aggregate them (sum, max) or judge them per target",
			len(v.Series), listSome(names))}
	}
	j := m.judge(v.Series[0].Values)
	return Outcome{Phase: j.phase, HasValue: j.hasValue, Value: j.value, Reason: j.reason}
}

// judgement is the verdict on one series' values.
type judgement struct {
	phase    Phase
	hasValue bool
	value    float64
	reason   string
}

// judge evaluates the success condition over one series' values: the
// result is the latest finite value. NaN samples are left out (a ratio of
// zero requests is NaN: no data at that step); an infinite one makes the
// measurement inconclusive rather than pass a `result < x` condition.
func (m *MetricProgram) judge(raw []float64) judgement {
	values, infinite := finiteValues(raw)
	if !math.IsNaN(infinite) {
		return judgement{phase: PhaseInconclusive, reason: fmt.Sprintf(
			"the value is %s (a division by zero: no traffic?)", formatValue(infinite))}
	}
	if len(values) == 0 {
		return judgement{phase: PhaseInconclusive, reason: "no data: the value is NaN"}
	}
	result := values[len(values)-1]
	ok, err := m.cond.eval(&singleEnv{Result: result, Values: values})
	return m.verdict(result, ok, err)
}

// verdict turns a condition's result into a judgement naming the value.
func (m *MetricProgram) verdict(result float64, ok bool, err error) judgement {
	j := judgement{hasValue: true, value: result}
	switch {
	case err != nil:
		j.phase, j.reason = PhaseError, fmt.Sprintf("result = %s: %v", formatValue(result), err)
	case ok:
		j.phase, j.reason = PhaseSuccessful, fmt.Sprintf("result = %s: %q holds", formatValue(result), m.cond.source)
	default:
		j.phase, j.reason = PhaseFailed, fmt.Sprintf("result = %s: %q does not hold", formatValue(result), m.cond.source)
	}
	return j
}

// finiteValues returns the finite values of raw, and the first infinite
// one (NaN when there is none).
func finiteValues(raw []float64) (values []float64, infinite float64) {
	values = make([]float64, 0, len(raw))
	infinite = math.NaN()
	for _, v := range raw {
		switch {
		case math.IsNaN(v):
		case math.IsInf(v, 0):
			if math.IsNaN(infinite) {
				infinite = v
			}
		default:
			values = append(values, v)
		}
	}
	return values, infinite
}
