//go:build integration

package rollout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestUnhealthyTargetFailsAfterItsGrace: a target whose Promotion succeeds
// but whose Stage stays unhealthy fails once the wave's unhealthyGrace has
// passed since the Promotion finished, not at the 15-minute progress
// deadline; with maxFailures 0 the wave halts at once.
func TestUnhealthyTargetFailsAfterItsGrace(t *testing.T) {
	sick := map[string]string{kargosim.FaultVar: kargosim.FaultUnhealthy}
	targets := append(inline("ok", 2, nil, nil), inline("sick", 1, nil, sick)...)
	f := newFleet(t, "unhealthy-grace", fleetSpec{
		targets: targets,
		waves: []fleetv1alpha1.Wave{{
			Name: "all", MaxConcurrent: testutil.Int(3), MaxFailures: testutil.Int(0),
			UnhealthyGrace: &metav1.Duration{Duration: 3 * time.Second},
		}},
	})
	start := time.Now()
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted, fleetv1alpha1.RolloutSucceeded)
	require.Less(t, time.Since(start), time.Minute, "judged within the grace, not at the progress deadline (15m)")
	require.Equal(t, fleetv1alpha1.RolloutFailed, ro.Status.Phase, ro.Status.Message)
	require.Len(t, ro.Status.Failures, 1)
	g := ro.Status.Failures[0]
	require.Equal(t, rollout.ReasonUnhealthy, g.Reason)
	require.EqualValues(t, 1, g.Count)
	require.Equal(t, "sick-00", g.Examples[0].Name)
	require.Contains(t, g.Examples[0].Reason, "after the Promotion succeeded (unhealthyGrace 3s)")
	require.EqualValues(t, 2, ro.Status.Waves[0].Succeeded)
}
