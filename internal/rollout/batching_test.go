package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestMinBatch(t *testing.T) {
	t.Parallel()
	for maxConcurrent, want := range map[int]int{1: 1, 5: 1, 16: 1, 17: 2, 50: 4, 200: 13, 256: 16, 500: 16, 10000: 16} {
		require.Equal(t, want, minBatch(maxConcurrent), "maxConcurrent %d", maxConcurrent)
	}
}

func TestHoldBatch(t *testing.T) {
	t.Parallel()
	held := now.Add(-2 * time.Second)
	for _, tc := range []struct {
		name                                   string
		starts, pending, inFlight, concurrency int
		heldSince                              time.Time
		want                                   bool
	}{
		{name: "a few slots of many free: held", starts: 3, pending: 500, inFlight: 197, concurrency: 200, want: true},
		{name: "still within the wait", starts: 5, pending: 500, inFlight: 195, concurrency: 200, heldSince: held, want: true},
		{name: "the wait is over", starts: 5, pending: 500, inFlight: 195, concurrency: 200, heldSince: now.Add(-BatchWait), want: false},
		{name: "a sixteenth of the slots starts at once", starts: 13, pending: 500, inFlight: 187, concurrency: 200, want: false},
		{name: "the wave's last targets start at once", starts: 3, pending: 3, inFlight: 197, concurrency: 200, want: false},
		{name: "nothing in flight frees a slot: start", starts: 3, pending: 500, inFlight: 0, concurrency: 200, want: false},
		{name: "a narrow wave never holds", starts: 1, pending: 50, inFlight: 4, concurrency: 5, want: false},
		{name: "nothing to start", starts: 0, pending: 50, inFlight: 200, concurrency: 200, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, holdBatch(tc.starts, tc.pending, tc.inFlight, tc.concurrency, tc.heldSince, now))
		})
	}
}

// TestDecideHoldsSmallBatches: a wide wave whose slots free one by one
// starts them in batches; the held starts are not counted in flight, and
// the rollout looks again when the wait ends. A rollback never waits.
func TestDecideHoldsSmallBatches(t *testing.T) {
	t.Parallel()
	wide := func(direction fleetv1alpha1.RolloutDirection) Observation {
		w := plan.PlannedWave{Name: "all", MaxConcurrent: 200, ProgressDeadline: time.Hour}
		for i := range 400 {
			id := fmt.Sprintf("t-%03d", i)
			w.Members = append(w.Members, plan.Target{ID: id, Name: id})
		}
		o := observe(&plan.WavePlan{Waves: []plan.PlannedWave{w}}, requested("all"))
		o.Rollout.Spec.Direction = direction
		for i := range 197 { // three of 200 slots free
			target(fmt.Sprintf("t-%03d", i), kargo.PromotionRunning)(&o)
		}
		return o
	}
	d := Decide(wide(fleetv1alpha1.DirectionForward))
	require.True(t, d.HeldBatch)
	require.Empty(t, d.Start)
	require.Equal(t, now.Add(BatchWait), d.RequeueAt)
	require.EqualValues(t, 197, d.Waves[0].InFlight)
	require.EqualValues(t, 203, d.Waves[0].Pending)

	o := wide(fleetv1alpha1.DirectionForward)
	o.BatchHeldSince = now.Add(-BatchWait)
	d = Decide(o)
	require.False(t, d.HeldBatch)
	require.Len(t, d.Start, 3, "the wait is over: the free slots start")
	require.EqualValues(t, 200, d.Waves[0].InFlight)

	d = Decide(wide(fleetv1alpha1.DirectionRollback))
	require.False(t, d.HeldBatch)
	require.Len(t, d.Start, 3)
}
