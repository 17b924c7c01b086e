package analysis

import (
	"fmt"
	"testing"
)

// benchSizes are the target counts every benchmark runs at.
var benchSizes = []int{100, 1000, 10000}

// BenchmarkTemplateRender renders a two-placeholder query (ids and a
// label) for a wave of n targets.
func BenchmarkTemplateRender(b *testing.B) {
	tmpl, err := ParseTemplate(`sum by (cluster) (rate(errors{cluster=~"{{targets.regex}}", region=~"{{targets.label "region" | regex}}"}[5m]))`)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			sets := TargetSets{Targets: make([]Target, n)}
			for i := range sets.Targets {
				sets.Targets[i] = Target{
					ID:     fmt.Sprintf("prod-%s-cluster-%05d", []string{"eu", "us", "ap"}[i%3], i),
					Labels: map[string]string{"region": fmt.Sprintf("region-%d", i%20)},
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tmpl.Render(sets); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
