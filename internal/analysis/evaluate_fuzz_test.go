package analysis

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// fuzzConditions would pass NaN or an infinity if one ever reached them.
var fuzzConditions = []string{
	"result < 0.5",
	"result > 0.5",
	"result != result || result < 0",
	"not (result >= 0.5)",
	"all(values, # < 1)",
	"mean(values) < 1 && len(values) > 0",
}

// fuzzSample decodes one byte: a few values are NaN and infinities, the
// rest spread over [0, 2.5].
func fuzzSample(b byte) float64 {
	switch b % 16 {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1)
	case 2:
		return math.Inf(-1)
	}
	return float64(b) / 100
}

// fuzzValue builds a result from data: the first byte says how many
// series, the rest are samples dealt round-robin.
func fuzzValue(data []byte, kind ValueKind) Value {
	v := Value{Kind: kind}
	if len(data) == 0 {
		return v
	}
	n := int(data[0] % 4)
	for i := range n {
		v.Series = append(v.Series, Series{Labels: map[string]string{"cluster": string(rune('a' + i))}})
	}
	for i, b := range data[1:] {
		if n == 0 {
			break
		}
		s := &v.Series[i%n]
		if kind != KindMatrix && len(s.Values) == 1 {
			continue
		}
		s.Values = append(s.Values, fuzzSample(b))
	}
	return v
}

// FuzzEvaluate evaluates arbitrary results, including NaN, infinities,
// empty and several series, with conditions that NaN or an infinity would
// satisfy: nothing panics, the outcome is deterministic, no Successful
// verdict carries a non-finite value, and a result without one finite
// sample is never Successful.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{1, 50}, []byte{1, 10}, uint8(0), uint8(0))
	f.Add([]byte{1, 0}, []byte{}, uint8(2), uint8(0))
	f.Add([]byte{1, 1}, []byte{}, uint8(0), uint8(1))
	f.Add([]byte{1, 2}, []byte{}, uint8(3), uint8(0))
	f.Add([]byte{3, 50, 60, 0, 2}, []byte{2, 10, 11, 12}, uint8(1), uint8(2))
	f.Add([]byte{2, 200, 210, 220, 230, 240}, []byte{2, 10, 20, 30, 40, 50, 60}, uint8(0), uint8(2))
	f.Add([]byte{0}, []byte{0}, uint8(4), uint8(1))
	// One program per condition and mode, compiled once.
	programs := make([][3]*MetricProgram, len(fuzzConditions))
	for c, cond := range fuzzConditions {
		for mode := range 3 {
			spec := errorRate()
			spec.SuccessCondition = cond
			switch mode {
			case 1:
				spec.PerTarget = &PerTargetSpec{SeriesLabel: "cluster"}
			case 2:
				spec.Baseline = &BaselineSpec{}
			}
			programs[c][mode] = compileMetricT(f, spec)
		}
	}
	f.Fuzz(func(t *testing.T, result, baseline []byte, condIndex, mode uint8) {
		m := programs[int(condIndex)%len(fuzzConditions)][mode%3]
		kind := KindVector
		if mode%3 == 2 {
			kind = KindMatrix
		}
		meas := Measurement{At: t0, Result: fuzzValue(result, kind), Baseline: fuzzValue(baseline, kind)}
		wave := targets("a", "b")
		got := m.Evaluate(meas, wave)
		if again := m.Evaluate(meas, wave); !reflect.DeepEqual(got, again) {
			t.Fatalf("evaluation is not deterministic: %+v then %+v", got, again)
		}
		checkFinite(t, got)
		if got.Phase == PhaseSuccessful && !hasFinite(meas.Result) {
			t.Fatalf("a result without a finite sample passed: %+v", got)
		}
		// A run fed this outcome never passes before it has Count
		// conclusive measurements.
		s := NewRunState(t0)
		s.Record(got)
		if d := m.Decide(s, t0.Add(time.Hour)); d.Phase == RunPassed {
			t.Fatalf("one measurement passed a run of %d: %+v", m.Spec().Count, d)
		}
	})
}

// checkFinite fails when a Successful verdict carries no finite value.
func checkFinite(t *testing.T, o Outcome) {
	t.Helper()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if o.Phase == PhaseSuccessful && (!o.HasValue || !finite(o.Value)) && o.Targets == nil {
		t.Fatalf("successful without a finite value: %+v", o)
	}
	if !finite(o.Value) {
		t.Fatalf("non-finite value in outcome: %+v", o)
	}
	for _, to := range o.Targets {
		if !finite(to.Value) || (to.Phase == PhaseSuccessful && !to.HasValue) {
			t.Fatalf("target %s successful without a finite value: %+v", to.Target, to)
		}
	}
	if c := o.Comparison; c != nil && (!finite(c.WaveMean) || !finite(c.BaselineMean) || !finite(c.P)) {
		t.Fatalf("non-finite comparison: %+v", c)
	}
}

// hasFinite reports whether any series of v has a finite sample.
func hasFinite(v Value) bool {
	for _, s := range v.Series {
		for _, x := range s.Values {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				return true
			}
		}
	}
	return false
}
