package analysis

import (
	"cmp"
	"errors"
	"math"
	"slices"
)

// Alternative is the alternative hypothesis of a two-sample test.
type Alternative int

const (
	// AlternativeGreater is the hypothesis that the first sample tends to be greater.
	AlternativeGreater Alternative = iota
	// AlternativeLess is the hypothesis that the first sample tends to be smaller.
	AlternativeLess
	// AlternativeTwoSided is the hypothesis that the samples differ either way.
	AlternativeTwoSided
)

// maxExactSamples is the largest n1+n2 for which the exact distribution of
// U is computed: its counts, at most C(60, 30) ≈ 1.2e17, fit an int64.
const maxExactSamples = 60

// MannWhitneyResult is the outcome of a Mann-Whitney U test.
type MannWhitneyResult struct {
	// U is the statistic of the first sample: the number of pairs (x, y)
	// with x > y, ties counting one half.
	U float64
	// P is the p-value for the alternative.
	P float64
	// Exact says whether P comes from the exact distribution of U (no ties,
	// at most maxExactSamples samples) or from the normal approximation with
	// tie and continuity corrections.
	Exact bool
	// N1 and N2 are the sample sizes.
	N1, N2 int
}

// rankedSample is one sample of the pooled, sorted data.
type rankedSample struct {
	value float64
	first bool
}

// MannWhitney tests whether x and y come from the same distribution
// against alt. The test compares ranks, not values, so it needs no
// assumption about the shape of the distributions (error rates and
// latencies are rarely normal) and one outlier weighs no more than any
// other sample. Both samples must be non-empty and finite.
func MannWhitney(x, y []float64, alt Alternative) (MannWhitneyResult, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MannWhitneyResult{}, errors.New("both samples must be non-empty")
	}
	pooled := make([]rankedSample, 0, n1+n2)
	for _, v := range x {
		pooled = append(pooled, rankedSample{value: v, first: true})
	}
	for _, v := range y {
		pooled = append(pooled, rankedSample{value: v})
	}
	for _, s := range pooled {
		if math.IsNaN(s.value) || math.IsInf(s.value, 0) {
			return MannWhitneyResult{}, errors.New("samples must be finite")
		}
	}
	slices.SortFunc(pooled, func(a, b rankedSample) int { return cmp.Compare(a.value, b.value) })

	// Midranks: tied values share the mean of the ranks they span.
	var rankSum, tieTerm float64
	for i := 0; i < len(pooled); {
		j := i + 1
		for j < len(pooled) && pooled[j].value == pooled[i].value {
			j++
		}
		midrank := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			if pooled[k].first {
				rankSum += midrank
			}
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	u := rankSum - float64(n1)*float64(n1+1)/2
	res := MannWhitneyResult{U: u, N1: n1, N2: n2}
	if tieTerm == 0 && n1+n2 <= maxExactSamples {
		res.P, res.Exact = exactMannWhitneyP(int(math.Round(u)), n1, n2, alt), true
	} else {
		res.P = normalMannWhitneyP(u, n1, n2, tieTerm, alt)
	}
	return res, nil
}

// normalMannWhitneyP is the p-value of u under the normal approximation,
// with the variance corrected for ties and a continuity correction of one
// half.
func normalMannWhitneyP(u float64, n1, n2 int, tieTerm float64, alt Alternative) float64 {
	a, b := float64(n1), float64(n2)
	n := a + b
	mean := a * b / 2
	variance := a * b / 12 * ((n + 1) - tieTerm/(n*(n-1)))
	if variance <= 0 {
		// Every sample is equal: no evidence of any difference.
		return 1
	}
	sd := math.Sqrt(variance)
	upper := func(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) } // P(Z >= z)
	switch alt {
	case AlternativeGreater:
		return upper((u - mean - 0.5) / sd)
	case AlternativeLess:
		return upper((mean - u - 0.5) / sd)
	default:
		return min(1, 2*upper((math.Abs(u-mean)-0.5)/sd))
	}
}

// exactMannWhitneyP is the p-value of u from the exact distribution of U
// for samples of n1 and n2 without ties.
func exactMannWhitneyP(u, n1, n2 int, alt Alternative) float64 {
	counts := uDistribution(n1, n2)
	var total, atLeast, atMost float64
	for k, c := range counts {
		f := float64(c)
		total += f
		if k >= u {
			atLeast += f
		}
		if k <= u {
			atMost += f
		}
	}
	switch alt {
	case AlternativeGreater:
		return atLeast / total
	case AlternativeLess:
		return atMost / total
	default:
		return min(1, 2*min(atLeast, atMost)/total)
	}
}

// uDistribution returns, for every u in 0..n1·n2, the number of orderings
// of n1 + n2 distinct values in which U = u. These are the coefficients of
// the Gaussian binomial [n1+n2 choose m]_q (m the smaller size), built as
// the product over k = 1..m of (1 − q^(n+k)) / (1 − q^k): every partial
// product is itself a Gaussian binomial, so each division is exact.
func uDistribution(n1, n2 int) []int64 {
	m, n := min(n1, n2), max(n1, n2)
	// Room for the degree k·n + k a multiplication reaches before its
	// division.
	counts := make([]int64, m*n+m+1)
	counts[0] = 1
	degree := 0
	for k := 1; k <= m; k++ {
		// Multiply by (1 − q^(n+k)).
		shift := n + k
		for j := degree + shift; j >= shift; j-- {
			counts[j] -= counts[j-shift]
		}
		degree += shift
		// Divide by (1 − q^k): multiply by 1 + q^k + q^2k + ...
		for j := k; j <= degree; j++ {
			counts[j] += counts[j-k]
		}
		degree -= k
	}
	return counts[:m*n+1]
}

// minimumP is the smallest p-value samples of n1 and n2 can reach against
// alt (all of one sample above all of the other, no ties): with fewer
// samples than that, no difference can ever be significant.
func minimumP(n1, n2 int, alt Alternative) float64 {
	// 1 / C(n1+n2, n1), built as a product to stay in range.
	p := 1.0
	for i := 1; i <= min(n1, n2); i++ {
		p *= float64(i) / float64(max(n1, n2)+i)
	}
	if alt == AlternativeTwoSided {
		return min(1, 2*p)
	}
	return p
}
