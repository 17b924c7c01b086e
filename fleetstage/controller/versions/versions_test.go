package versions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
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
