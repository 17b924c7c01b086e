package dashboard

import (
	"fmt"
	"testing"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
)

// BenchmarkBuildFleet is the server's work per page view and per live push,
// once the objects are read from the cache.
func BenchmarkBuildFleet(b *testing.B) {
	for _, n := range []int{200, 1000, 10000} {
		in := fleetInput(dashtest.NewFleet(n, now), "")
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = BuildFleet(in)
			}
		})
	}
}
