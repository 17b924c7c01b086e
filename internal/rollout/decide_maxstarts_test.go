package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TestDecideMaxStarts: a decision starts at most MaxStarts targets, says
// more are due, and its wave counts only what it starts as in flight, so
// the rollout's status never shows slots filled by Promotions not created.
func TestDecideMaxStarts(t *testing.T) {
	t.Parallel()
	wideGeneral := func() Observation {
		p := fleet()
		p.Waves[2].MaxConcurrent = 8
		o := observe(p, requested("pilot", "canary", "general"), succeeded("pilot-00", "canary-00", "canary-01", "canary-02", "canary-03"),
			target("general-00", kargo.PromotionRunning))
		o.ApprovedWaves["general"] = true
		return o
	}
	general := func(d Decision) fleetv1alpha1.WaveProgress {
		for _, w := range d.Waves {
			if w.Name == "general" {
				return w
			}
		}
		t.Fatal("no general wave in the decision")
		return fleetv1alpha1.WaveProgress{}
	}

	tests := []struct {
		name         string
		maxStarts    int
		wantStarts   int
		wantMore     bool
		wantInFlight int32
		wantPending  int32
	}{
		{name: "unbounded fills every free slot", maxStarts: 0, wantStarts: 7, wantInFlight: 8, wantPending: 2},
		{name: "bounded below the free slots", maxStarts: 3, wantStarts: 3, wantMore: true, wantInFlight: 4, wantPending: 6},
		{name: "bound equal to the free slots", maxStarts: 7, wantStarts: 7, wantInFlight: 8, wantPending: 2},
		{name: "bound above the free slots", maxStarts: 63, wantStarts: 7, wantInFlight: 8, wantPending: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := wideGeneral()
			o.MaxStarts = tt.maxStarts
			d := Decide(o)
			require.Len(t, d.Start, tt.wantStarts, startIDs(d))
			require.Equal(t, tt.wantMore, d.MoreToStart)
			w := general(d)
			require.Equal(t, tt.wantInFlight, w.InFlight, "in flight: the running target and the ones started")
			require.Equal(t, tt.wantPending, w.Pending)
		})
	}
}
