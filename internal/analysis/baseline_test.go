package analysis

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func Test_compareSamples(t *testing.T) {
	t.Parallel()
	spec := &BaselineSpec{Direction: DirectionIncrease, ConfidencePercent: 95}
	c, err := compareSamples([]float64{5, 6, 7}, []float64{1, 2, 3, 4}, spec)
	require.NoError(t, err)
	require.InDelta(t, 6.0, c.WaveMean, 1e-12)
	require.InDelta(t, 2.5, c.BaselineMean, 1e-12)
	require.Equal(t, 3, c.WaveSamples)
	require.Equal(t, 4, c.BaselineSamples)
	require.InDelta(t, 1.0/35, c.P, 1e-12)
	require.True(t, c.Exact)
	require.True(t, c.Significant)

	// 2 vs 2 can reach p = 1/6 at best: never below 0.05.
	_, err = compareSamples([]float64{9, 10}, []float64{1, 2}, spec)
	var tooFew *errTooFewSamples
	require.ErrorAs(t, err, &tooFew)
	require.Contains(t, err.Error(), "best possible p = 0.1667, needed below 0.05")

	require.Equal(t, AlternativeLess, alternativeFor(DirectionDecrease))
	require.Equal(t, AlternativeTwoSided, alternativeFor(DirectionEither))
	require.Equal(t, AlternativeGreater, alternativeFor(DirectionIncrease))
}

func Test_mean(t *testing.T) {
	t.Parallel()
	require.True(t, math.IsNaN(mean(nil)))
	require.InDelta(t, 2.0, mean([]float64{1, 2, 3}), 1e-12)
	require.InDelta(t, math.MaxFloat64, mean([]float64{math.MaxFloat64, math.MaxFloat64}), 1e292)
}
