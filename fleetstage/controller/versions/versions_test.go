package versions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestVersionRefreshIntervalGrowsWithTheFleet(t *testing.T) {
	t.Parallel()
	for targets, want := range map[int]time.Duration{
		0: 2 * time.Second, 200: 2 * time.Second, 1000: 2 * time.Second,
		5000: 10 * time.Second, 10000: 20 * time.Second, 50000: 20 * time.Second,
	} {
		require.Equal(t, want, versionRefreshInterval(targets), "%d targets", targets)
	}
}

func TestWriteTimesPaceWritesPerFleetStage(t *testing.T) {
	t.Parallel()
	var w writeTimes
	a, b := types.NamespacedName{Namespace: "p", Name: "a"}, types.NamespacedName{Namespace: "p", Name: "b"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Zero(t, w.wait(a, 5*time.Second, now), "never written: write at once")
	w.wrote(a, now)
	require.Equal(t, 3*time.Second, w.wait(a, 5*time.Second, now.Add(2*time.Second)))
	require.Zero(t, w.wait(a, 5*time.Second, now.Add(6*time.Second)))
	require.Zero(t, w.wait(b, 5*time.Second, now), "another FleetStage has its own pace")
	w.forget(a)
	require.Zero(t, w.wait(a, 5*time.Second, now))
}

func TestHoldVersionsBoundsWritesPerTarget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	r := &Reconciler{clock: clk}
	key := types.NamespacedName{Namespace: "p", Name: "fleet"}
	dist := func(old, moved int32) *fleetv1alpha1.FleetStageStatus {
		return &fleetv1alpha1.FleetStageStatus{Versions: []fleetv1alpha1.FreightCount{{Freight: "f1", Targets: old}, {Freight: "f2", Targets: moved}}}
	}
	require.Zero(t, r.holdVersions(key, dist(1000, 0), dist(999, 1)), "never written: written at once")
	r.writes.wrote(key, now)
	clk.SetTime(now.Add(3 * time.Second))
	require.Equal(t, 27*time.Second, r.holdVersions(key, dist(1000, 0), dist(997, 3)), "3 of 1,000 moved: fewer than a 250th")
	require.Zero(t, r.holdVersions(key, dist(1000, 0), dist(996, 4)), "a 250th of the fleet moved: written")
	withDrift := dist(997, 3)
	withDrift.Drift = &fleetv1alpha1.DriftStatus{Count: 1}
	require.Zero(t, r.holdVersions(key, dist(1000, 0), withDrift), "more than the distribution changed: written")
	clk.SetTime(now.Add(31 * time.Second))
	require.Zero(t, r.holdVersions(key, dist(1000, 0), dist(999, 1)), "after the longest wait any move is written")
}
