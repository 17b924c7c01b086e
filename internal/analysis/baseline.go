package analysis

import (
	"fmt"
	"math"
)

// Comparison is a baseline metric's measurement: the wave's samples against
// the baseline's over the same window.
type Comparison struct {
	// WaveMean and BaselineMean are the means of each side's samples.
	WaveMean, BaselineMean float64
	// WaveSamples and BaselineSamples count each side's finite samples.
	WaveSamples, BaselineSamples int
	// P is the Mann-Whitney p-value in the metric's direction.
	P float64
	// Exact says whether P is exact or the normal approximation.
	Exact bool
	// Alpha is 1 − confidence: P below it is significant.
	Alpha float64
	// Significant says whether the wave differs from the baseline in the
	// metric's direction with the metric's confidence.
	Significant bool
}

// alternativeFor is the test's alternative for the direction in which a
// metric gets worse.
func alternativeFor(d Direction) Alternative {
	switch d {
	case DirectionDecrease:
		return AlternativeLess
	case DirectionEither:
		return AlternativeTwoSided
	default:
		return AlternativeGreater
	}
}

// errTooFewSamples is returned by compareSamples when no arrangement of
// samples this small could be significant.
type errTooFewSamples struct {
	wave, baseline int
	minimum, alpha float64
}

func (e *errTooFewSamples) Error() string {
	return fmt.Sprintf("too few samples: %d from the wave and %d from the baseline cannot show a significant difference (best possible p = %s, needed below %s)",
		e.wave, e.baseline, formatValue(e.minimum), formatValue(e.alpha))
}

// compareSamples runs the Mann-Whitney test of wave against baseline in the
// direction spec says, at spec's confidence. Samples must be finite.
func compareSamples(wave, baseline []float64, spec *BaselineSpec) (Comparison, error) {
	c := Comparison{
		WaveMean: mean(wave), BaselineMean: mean(baseline),
		WaveSamples: len(wave), BaselineSamples: len(baseline),
		Alpha: 1 - float64(spec.ConfidencePercent)/100,
	}
	alt := alternativeFor(spec.Direction)
	if lowest := minimumP(len(wave), len(baseline), alt); lowest >= c.Alpha {
		return c, &errTooFewSamples{wave: len(wave), baseline: len(baseline), minimum: lowest, alpha: c.Alpha}
	}
	res, err := MannWhitney(wave, baseline, alt)
	if err != nil {
		return c, err
	}
	c.P, c.Exact = res.P, res.Exact
	c.Significant = res.P < c.Alpha
	return c, nil
}

// mean is the arithmetic mean, summed in a way that does not overflow for
// large finite values.
func mean(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	var m float64
	for i, v := range values {
		m += (v - m) / float64(i+1)
	}
	return m
}
