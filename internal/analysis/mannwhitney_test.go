package analysis

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMannWhitney(t *testing.T) {
	t.Parallel()
	repeat := func(values []float64, n int) []float64 {
		var out []float64
		for range n {
			out = append(out, values...)
		}
		return out
	}
	tests := []struct {
		name      string
		x, y      []float64
		alt       Alternative
		wantU     float64
		wantP     float64
		wantExact bool
	}{
		{
			// Every x below every y: the smallest possible p, 1/C(10,5).
			name: "separated, less", x: []float64{1, 2, 3, 4, 5}, y: []float64{6, 7, 8, 9, 10},
			alt: AlternativeLess, wantU: 0, wantP: 1.0 / 252, wantExact: true,
		},
		{
			name: "separated, two-sided", x: []float64{1, 2, 3, 4, 5}, y: []float64{6, 7, 8, 9, 10},
			alt: AlternativeTwoSided, wantU: 0, wantP: 2.0 / 252, wantExact: true,
		},
		{
			name: "separated, greater", x: []float64{1, 2, 3, 4, 5}, y: []float64{6, 7, 8, 9, 10},
			alt: AlternativeGreater, wantU: 0, wantP: 1, wantExact: true,
		},
		{
			// U = 17 of 20: P(U >= 17) = 7/126.
			name: "textbook, greater", x: []float64{19, 22, 16, 29, 24}, y: []float64{20, 11, 17, 12},
			alt: AlternativeGreater, wantU: 17, wantP: 7.0 / 126, wantExact: true,
		},
		{
			name: "textbook, two-sided", x: []float64{19, 22, 16, 29, 24}, y: []float64{20, 11, 17, 12},
			alt: AlternativeTwoSided, wantU: 17, wantP: 14.0 / 126, wantExact: true,
		},
		{
			// Reference values from the textbook formula, computed apart.
			name: "ties, greater", x: []float64{1, 2, 2, 3, 3, 3}, y: []float64{2, 3, 4, 4, 5, 6, 7},
			alt: AlternativeGreater, wantU: 5.5, wantP: 0.9902104477794709,
		},
		{
			name: "ties, less", x: []float64{1, 2, 2, 3, 3, 3}, y: []float64{2, 3, 4, 4, 5, 6, 7},
			alt: AlternativeLess, wantU: 5.5, wantP: 0.014319415621635388,
		},
		{
			name: "ties, two-sided", x: []float64{1, 2, 2, 3, 3, 3}, y: []float64{2, 3, 4, 4, 5, 6, 7},
			alt: AlternativeTwoSided, wantU: 5.5, wantP: 0.028638831243270775,
		},
		{
			// Error rates: mostly zeros, the wave slightly higher.
			name: "many zeros", x: repeat([]float64{0, 0, 0, 0.01, 0.02}, 10), y: repeat([]float64{0, 0, 0, 0, 0.01}, 20),
			alt: AlternativeGreater, wantU: 3100, wantP: 0.0009929007859698074,
		},
		{
			name: "all equal", x: []float64{0, 0, 0}, y: []float64{0, 0, 0, 0},
			alt: AlternativeGreater, wantU: 6, wantP: 1,
		},
		{
			name: "all equal, two-sided", x: []float64{1, 1}, y: []float64{1, 1},
			alt: AlternativeTwoSided, wantU: 2, wantP: 1,
		},
		{
			name: "one against one", x: []float64{2}, y: []float64{1},
			alt: AlternativeGreater, wantU: 1, wantP: 0.5, wantExact: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MannWhitney(tt.x, tt.y, tt.alt)
			require.NoError(t, err)
			require.InDelta(t, tt.wantU, got.U, 1e-9)
			require.InDelta(t, tt.wantP, got.P, 1e-12)
			require.Equal(t, tt.wantExact, got.Exact)
			require.Equal(t, len(tt.x), got.N1)
			require.Equal(t, len(tt.y), got.N2)
		})
	}
}

func TestMannWhitney_invalid(t *testing.T) {
	t.Parallel()
	for name, samples := range map[string][2][]float64{
		"empty first":  {nil, {1}},
		"empty second": {{1}, nil},
		"NaN":          {{1, math.NaN()}, {1}},
		"Inf":          {{1}, {math.Inf(1)}},
		"-Inf":         {{math.Inf(-1)}, {1}},
	} {
		_, err := MannWhitney(samples[0], samples[1], AlternativeGreater)
		require.Error(t, err, name)
	}
}

// TestMannWhitney_exactMatchesEnumeration checks the exact p-values against
// a count over every way of splitting the pooled samples.
func TestMannWhitney_exactMatchesEnumeration(t *testing.T) {
	t.Parallel()
	seed := uint64(7)
	for n1 := 1; n1 <= 6; n1++ {
		for n2 := 1; n2 <= 6; n2++ {
			x, y := make([]float64, n1), make([]float64, n2)
			for i := range x {
				seed = nextSeed(seed)
				x[i] = float64(seed%1000) + float64(i)/1e4
			}
			for i := range y {
				seed = nextSeed(seed)
				y[i] = float64(seed%1000) + 0.5 + float64(i)/1e4
			}
			for _, alt := range []Alternative{AlternativeGreater, AlternativeLess, AlternativeTwoSided} {
				got, err := MannWhitney(x, y, alt)
				require.NoError(t, err)
				require.True(t, got.Exact)
				require.InDelta(t, enumeratedP(x, y, alt), got.P, 1e-12, "n1=%d n2=%d alt=%d", n1, n2, alt)
			}
		}
	}
}

// enumeratedP is the exact p-value of U by enumeration of every subset of
// the pooled samples that could have been x.
func enumeratedP(x, y []float64, alt Alternative) float64 {
	pooled := append(append([]float64{}, x...), y...)
	uOf := func(first []bool) float64 {
		var u float64
		for i, a := range pooled {
			for j, b := range pooled {
				if first[i] && !first[j] && a > b {
					u++
				}
			}
		}
		return u
	}
	observed := make([]bool, len(pooled))
	for i := range x {
		observed[i] = true
	}
	u0 := uOf(observed)
	var total, ge, le float64
	for mask := 0; mask < 1<<len(pooled); mask++ {
		first := make([]bool, len(pooled))
		n := 0
		for i := range pooled {
			if mask&(1<<i) != 0 {
				first[i] = true
				n++
			}
		}
		if n != len(x) {
			continue
		}
		total++
		u := uOf(first)
		if u >= u0 {
			ge++
		}
		if u <= u0 {
			le++
		}
	}
	switch alt {
	case AlternativeGreater:
		return ge / total
	case AlternativeLess:
		return le / total
	default:
		return math.Min(1, 2*math.Min(ge, le)/total)
	}
}

// nextSeed is a small deterministic generator (the package may not use
// math/rand).
func nextSeed(s uint64) uint64 {
	return s*6364136223846793005 + 1442695040888963407
}

func Test_uDistribution(t *testing.T) {
	t.Parallel()
	// The counts of U sum to C(n1+n2, n1) and are symmetric.
	for n1 := 1; n1 <= 30; n1++ {
		for n2 := 1; n1+n2 <= maxExactSamples; n2 += 7 {
			counts := uDistribution(n1, n2)
			require.Len(t, counts, n1*n2+1)
			var sum float64
			for k, c := range counts {
				require.GreaterOrEqual(t, c, int64(0))
				require.Equal(t, c, counts[len(counts)-1-k])
				sum += float64(c)
			}
			require.InEpsilon(t, 1/minimumP(n1, n2, AlternativeGreater), sum, 1e-9, "n1=%d n2=%d", n1, n2)
		}
	}
	require.Equal(t, []int64{1, 1, 2, 2, 2, 1, 1}, uDistribution(2, 3))
}

func Test_minimumP(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 1.0/20, minimumP(3, 3, AlternativeGreater), 1e-12)
	require.InDelta(t, 2.0/20, minimumP(3, 3, AlternativeTwoSided), 1e-12)
	require.InDelta(t, 1.0/21, minimumP(2, 5, AlternativeLess), 1e-12)
	require.InDelta(t, 1.0/2, minimumP(1, 1, AlternativeGreater), 1e-12)
	require.Greater(t, minimumP(500, 500, AlternativeGreater), 0.0)
}
