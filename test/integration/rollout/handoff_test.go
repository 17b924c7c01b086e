//go:build integration

package rollout_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestOnePromoteDrivesEveryWave promotes the Freight into the first wave
// Stage only, with no ProjectConfig: kargo-fleet promotes each next wave
// Stage itself, right after the previous wave's soak ends (Kargo would
// notice the end of a soak only at its five-minute resync).
func TestOnePromoteDrivesEveryWave(t *testing.T) {
	const soak = 3 * time.Second
	f := newFleet(t, "drives-itself", fleetSpec{
		targets: inline("c", 6, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1), Soak: &metav1.Duration{Duration: soak}},
			{Name: "canary", Count: testutil.Int(2)},
			{Name: "general"},
		},
	})
	dumpPromotions(t, f.ns)
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)

	pilot, canary := ro.Status.Waves[0], ro.Status.Waves[1]
	soakEnd := pilot.FinishedAt.Add(soak)
	require.False(t, canary.StartedAt.Time.Before(soakEnd.Add(-time.Second)), "canary started before the soak ended (times have a one-second grain)")
	require.LessOrEqual(t, canary.StartedAt.Sub(soakEnd), 3*time.Second, "the hand-off follows the end of the soak")

	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.WavePromotionLabel: ro.Name}))
	stages := map[string]int{}
	for _, p := range list.Items {
		stages[p.Spec.Stage]++
		require.Equal(t, f.good, p.Spec.Freight)
	}
	require.Equal(t, map[string]int{"fleet-canary": 1, "fleet-general": 1}, stages,
		"kargo-fleet promoted each later wave Stage once, and not the first")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, id)
	}
}

// TestManualWaveWaitsForTheOperator: a wave with promotion Manual is not
// promoted by kargo-fleet; the rollout says how to promote it.
func TestManualWaveWaitsForTheOperator(t *testing.T) {
	f := newFleet(t, "manual-wave", fleetSpec{
		targets: inline("c", 3, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "rest", Promotion: fleetv1alpha1.WavePromotionManual},
		},
	})
	f.ship(f.good)
	var ro *fleetv1alpha1.FleetRollout
	require.Eventually(t, func() bool {
		ro = f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro != nil && len(ro.Status.Waves) == 2 && ro.Status.Waves[0].Phase == fleetv1alpha1.WaveSucceeded
	}, wait, tick)
	time.Sleep(2 * time.Second)
	ro = f.findRollout(f.good, fleetv1alpha1.DirectionForward)
	require.Equal(t, fleetv1alpha1.WavePending, ro.Status.Waves[1].Phase)
	require.Contains(t, ro.Status.Waves[1].Waiting, "kargo promote --project manual-wave --freight f1-good --stage fleet-rest")
	require.Nil(t, f.latestWavePromotion("rest", f.good), "kargo-fleet does not promote a Manual wave")

	f.promote(f.good, "rest")
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
}
