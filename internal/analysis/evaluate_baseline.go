package analysis

import (
	"errors"
	"fmt"
	"math"
)

// evaluateBaseline judges a baseline metric: the wave's samples against the
// baseline's over the same window. The condition (e.g. `result <= 1.2 *
// baseline`) is the effect size that matters; the Mann-Whitney test says
// whether a difference is more than noise. A measurement fails only when
// both say so: worse by the condition AND significant. A global incident
// raises both sides, so the condition holds; with few targets a large
// ratio can be chance, so the test must agree.
func (m *MetricProgram) evaluateBaseline(meas Measurement) Outcome {
	wave, waveInf := finiteSeriesValues(meas.Result.Series)
	base, baseInf := finiteSeriesValues(meas.Baseline.Series)
	switch {
	case waveInf != "":
		return Outcome{Phase: PhaseInconclusive, Reason: "a sample of the wave's targets is " + waveInf + " (a division by zero: no traffic?)"}
	case baseInf != "":
		return Outcome{Phase: PhaseInconclusive, Reason: "a sample of the baseline targets is " + baseInf + " (a division by zero: no traffic?)"}
	case len(wave) == 0:
		return Outcome{Phase: PhaseInconclusive, Reason: "no data for the wave's targets"}
	case len(base) == 0:
		return Outcome{Phase: PhaseInconclusive, Reason: "no data for the baseline targets"}
	}
	env := &baselineEnv{Result: mean(wave), Baseline: mean(base), Values: wave, BaselineValues: base}
	o := Outcome{HasValue: true, Value: env.Result}
	summary := fmt.Sprintf("wave %s vs baseline %s", formatValue(env.Result), formatValue(env.Baseline))
	comparison, cmpErr := compareSamples(wave, base, m.spec.Baseline)
	if cmpErr != nil {
		comparison.P = 1
	}
	o.Comparison = &comparison
	ok, err := m.cond.eval(env)
	var tooFew *errTooFewSamples
	switch {
	case err != nil:
		o.Phase, o.Reason = PhaseError, fmt.Sprintf("%s: %v", summary, err)
	case ok:
		o.Phase, o.Reason = PhaseSuccessful, fmt.Sprintf("%s: %q holds", summary, m.cond.source)
	case errors.As(cmpErr, &tooFew):
		o.Phase, o.Reason = PhaseInconclusive, fmt.Sprintf("%s: %q does not hold, but %v", summary, m.cond.source, cmpErr)
	case cmpErr != nil:
		o.Phase, o.Reason = PhaseError, fmt.Sprintf("%s: %v", summary, cmpErr)
	case comparison.Significant:
		o.Phase, o.Reason = PhaseFailed, fmt.Sprintf("%s: %q does not hold and the difference is significant (%s)",
			summary, m.cond.source, describeTest(comparison))
	default:
		o.Phase, o.Reason = PhaseSuccessful, fmt.Sprintf("%s: %q does not hold, but the difference is not significant (%s)",
			summary, m.cond.source, describeTest(comparison))
	}
	return o
}

// describeTest writes a comparison's test result for people.
func describeTest(c Comparison) string {
	rel := "<"
	if !c.Significant {
		rel = "≥"
	}
	return fmt.Sprintf("Mann-Whitney p = %s %s %s, %d vs %d samples",
		formatValue(c.P), rel, formatValue(c.Alpha), c.WaveSamples, c.BaselineSamples)
}

// finiteSeriesValues pools the finite samples of every series, and names
// the first infinite one ("" when there is none).
func finiteSeriesValues(series []Series) (values []float64, infinite string) {
	for _, s := range series {
		v, inf := finiteValues(s.Values)
		values = append(values, v...)
		if infinite == "" && !math.IsNaN(inf) {
			infinite = formatValue(inf)
		}
	}
	return values, infinite
}
