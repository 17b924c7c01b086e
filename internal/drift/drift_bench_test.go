package drift

import (
	"fmt"
	"testing"
)

// BenchmarkDetect measures drift detection over a fleet where every
// hundredth target drifted during an open rollout.
func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		targets := make([]Target, n)
		for i := range targets {
			f := []string{"a"}
			switch {
			case i%100 == 0:
				f = []string{"manual"}
			case i%3 == 0:
				f = []string{"b"}
			}
			targets[i] = Target{Name: fmt.Sprintf("target-%05d", i), Stage: fmt.Sprintf("fleet-target-%05d", i), Freight: f}
		}
		in := Intent{Freight: "a", Explained: []string{"b"}}
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := Detect(in, targets); len(got) != n/100 {
					b.Fatalf("got %d drifts, want %d", len(got), n/100)
				}
			}
		})
	}
}
