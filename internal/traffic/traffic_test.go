package traffic

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMeterIntegratesRatiosOverTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMeter[string](100)
	m.Advance(t0, map[string]float64{"a": 0.1, "b": 0})
	got, ok := m.Counts("a")
	require.True(t, ok)
	require.Equal(t, Counts{}, got, "a service first seen starts counting now")

	m.Advance(t0.Add(10*time.Second), map[string]float64{"a": 0.1, "b": 0})
	got, _ = m.Counts("a")
	require.InDelta(t, 900, got.OK, 1e-9)
	require.InDelta(t, 100, got.Failed, 1e-9)

	// The ratio passed counts for the whole stretch since the last advance.
	m.Advance(t0.Add(15*time.Second), map[string]float64{"a": 0.5, "b": 1})
	got, _ = m.Counts("a")
	require.InDelta(t, 1150, got.OK, 1e-9)
	require.InDelta(t, 350, got.Failed, 1e-9)
	b, _ := m.Counts("b")
	require.InDelta(t, 1000, b.OK, 1e-9)
	require.InDelta(t, 500, b.Failed, 1e-9)

	// Time standing still or going back counts nothing.
	m.Advance(t0.Add(14*time.Second), map[string]float64{"a": 0.5, "b": 1})
	again, _ := m.Counts("a")
	require.Equal(t, got, again)

	// A service no longer passed is forgotten, and starts over when back.
	m.Advance(t0.Add(20*time.Second), map[string]float64{"a": 0.5})
	_, ok = m.Counts("b")
	require.False(t, ok)
	m.Advance(t0.Add(30*time.Second), map[string]float64{"a": 0.5, "b": 0})
	b, ok = m.Counts("b")
	require.True(t, ok)
	require.Equal(t, Counts{}, b)
}

// The rate of failed over all requests between two reads is the ratio in
// force between them, whatever the read times: what a PromQL ratio of
// rate()s computes.
func TestMeterRateGivesTheRatioBack(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := NewMeter[int](37)
	m.Advance(t0, map[int]float64{1: 0.02})
	prev, _ := m.Counts(1)
	for i, step := range []time.Duration{time.Second, 1500 * time.Millisecond, 7 * time.Second, 3 * time.Millisecond} {
		ratio := float64(i+1) * 0.05
		t0 = t0.Add(step)
		m.Advance(t0, map[int]float64{1: ratio})
		cur, _ := m.Counts(1)
		failed, all := cur.Failed-prev.Failed, cur.Failed+cur.OK-prev.Failed-prev.OK
		require.InDelta(t, ratio, failed/all, 1e-9, "step %d", i)
		require.InDelta(t, 37*step.Seconds(), all, 1e-6, "step %d", i)
		prev = cur
	}
}

func TestErrorRatio(t *testing.T) {
	for _, tc := range []struct{ ratio, incident, want float64 }{
		{0, 0, 0},
		{0.01, 0.2, 0.21},
		{0.9, 0.2, 1},
		{1, 1, 1},
	} {
		require.InDelta(t, tc.want, ErrorRatio(tc.ratio, tc.incident), 1e-12, "%v + %v", tc.ratio, tc.incident)
	}
}

func TestValidateRatio(t *testing.T) {
	for _, ok := range []float64{0, 0.5, 1} {
		require.NoError(t, ValidateRatio(ok))
	}
	for _, bad := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		require.Error(t, ValidateRatio(bad), "%v", bad)
	}
}

func FuzzMeterCountsOnlyGrow(f *testing.F) {
	f.Add(int64(1000), 0.3, int64(-5), 0.9)
	f.Fuzz(func(t *testing.T, d1 int64, r1 float64, d2 int64, r2 float64) {
		if ValidateRatio(r1) != nil || ValidateRatio(r2) != nil {
			return
		}
		t0 := time.Unix(0, 0)
		m := NewMeter[string](100)
		m.Advance(t0, map[string]float64{"x": r1})
		m.Advance(t0.Add(time.Duration(d1)*time.Millisecond), map[string]float64{"x": r1})
		a, _ := m.Counts("x")
		m.Advance(t0.Add(time.Duration(d1+d2)*time.Millisecond), map[string]float64{"x": r2})
		b, _ := m.Counts("x")
		if b.OK < a.OK || b.Failed < a.Failed || a.OK < 0 || a.Failed < 0 {
			t.Fatalf("counts went down or negative: %+v then %+v", a, b)
		}
	})
}

func BenchmarkMeterAdvance10000(b *testing.B) {
	ratios := make(map[int]float64, 10000)
	for i := range 10000 {
		ratios[i] = 0.01
	}
	m := NewMeter[int](100)
	t0 := time.Unix(0, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		m.Advance(t0.Add(time.Duration(i)*time.Second), ratios)
	}
}
