//go:build integration

package rollout_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func threeWaves() []fleetv1alpha1.Wave {
	return []fleetv1alpha1.Wave{
		{Name: "pilot", Count: testutil.Int(1)},
		{Name: "canary", Count: testutil.Int(3), MaxFailures: testutil.Int(0)},
		{Name: "general", MaxConcurrent: testutil.Int(3)},
	}
}

func TestThreeWaveRolloutSucceeds(t *testing.T) {
	f := newFleet(t, "three-waves", fleetSpec{targets: inline("c", 10, nil, nil), waves: threeWaves(), autoPromote: true})
	f.ship(f.good)

	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	for _, w := range ro.Status.Waves {
		require.Equal(t, fleetv1alpha1.WaveSucceeded, w.Phase, w.Name)
		require.Equal(t, w.Total, w.Succeeded, w.Name)
	}
	require.EqualValues(t, 10, ro.Status.Snapshot.Targets)
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, "target %s", id)
	}
	require.Equal(t, f.good, f.lastGood(), "the FleetStage records the Freight every wave passed with")
}
