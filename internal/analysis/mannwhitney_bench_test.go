package analysis

import (
	"fmt"
	"testing"
)

// benchSamples returns n deterministic samples in [0, 0.1), rounded to
// 1e-4 so that ties occur as they do in real error rates.
func benchSamples(n int, seed uint64) []float64 {
	out := make([]float64, n)
	for i := range out {
		seed = nextSeed(seed)
		out[i] = float64(seed>>11%1000) / 10000
	}
	return out
}

// BenchmarkMannWhitney tests two samples of n each: 500 vs 500 is a wave
// of 50 targets against 50 baseline targets at 10 samples each.
func BenchmarkMannWhitney(b *testing.B) {
	for _, n := range []int{10, 30, 500, 5000} {
		b.Run(fmt.Sprintf("samples=%dvs%d", n, n), func(b *testing.B) {
			x, y := benchSamples(n, 1), benchSamples(n, 2)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MannWhitney(x, y, AlternativeGreater); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("exact=30vs30", func(b *testing.B) {
		x, y := make([]float64, 30), make([]float64, 30)
		for i := range x {
			x[i], y[i] = float64(2*i), float64(2*i+1)
		}
		b.ReportAllocs()
		for b.Loop() {
			if res, err := MannWhitney(x, y, AlternativeGreater); err != nil || !res.Exact {
				b.Fatal(err)
			}
		}
	})
}
