package fleetrollouts

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func describedStage(name string) *kargo.Stage {
	return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
}

// TestDescribeWaves: a wave Stage's description is written when its text
// changes: at once for a new phase, at most once per descriptionInterval
// for counts only, never by a rollout the FleetStage does not show.
func TestDescribeWaves(t *testing.T) {
	t.Parallel()
	var writes atomic.Int32
	f := newFixture(t, &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch,
		opts ...client.PatchOption) error {
		if obj.GetName() == "prod-canary" {
			writes.Add(1)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}, fleetStage(), describedStage("prod-pilot"), describedStage("prod-canary"))
	f.r.DashboardURL = "https://fleet.example.com/"
	fs := fleetStage()
	ro := forward("prod-v2", badFreight, fleetv1alpha1.RolloutProgressing, 0)
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 1, Succeeded: 1},
		{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 2, InFlight: 2},
	}
	current := &fleetv1alpha1.FleetStageStatus{CurrentRollout: "prod-v2"}
	description := func() string {
		st := &kargo.Stage{}
		require.NoError(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "prod-canary"}, st))
		return st.Annotations[kargo.DescriptionAnnotation]
	}
	describe := func(recorded *fleetv1alpha1.FleetStageStatus) time.Duration {
		again, err := f.r.describeWaves(t.Context(), ro, fs, recorded)
		require.NoError(t, err)
		return again
	}

	require.Zero(t, describe(current))
	require.EqualValues(t, 1, writes.Load())
	require.Equal(t, "kargo-fleet rollout prod-v2 of Freight 9f8e7d6: Progressing. Wave canary: Progressing, "+
		"0 succeeded, 0 failed, 2 in flight of 2. Fleet dashboard: https://fleet.example.com/projects/shop/fleetstages/prod", description())

	// Counts only: held back, and the reconciler is told when to look again.
	ro.Status.Waves[1].Succeeded, ro.Status.Waves[1].InFlight = 1, 1
	require.Equal(t, descriptionInterval, describe(current))
	require.EqualValues(t, 1, writes.Load())
	f.clock.Step(descriptionInterval)
	require.Zero(t, describe(current))
	require.EqualValues(t, 2, writes.Load())
	require.Contains(t, description(), "1 succeeded, 0 failed, 1 in flight of 2")

	// A new phase: at once.
	ro.Status.Waves[1].Phase, ro.Status.Waves[1].Succeeded, ro.Status.Waves[1].InFlight = fleetv1alpha1.WaveSucceeded, 2, 0
	ro.Status.Phase = fleetv1alpha1.RolloutSucceeded
	require.Zero(t, describe(current))
	require.EqualValues(t, 3, writes.Load())
	require.True(t, strings.HasPrefix(description(), "kargo-fleet rollout prod-v2 of Freight 9f8e7d6: Succeeded. Wave canary: Succeeded"))

	// The same text: nothing written.
	describe(current)
	require.EqualValues(t, 3, writes.Load())

	// A rollout the FleetStage does not show (a queued one, an old one)
	// leaves the description alone.
	ro.Status.Phase = fleetv1alpha1.RolloutFailed
	describe(&fleetv1alpha1.FleetStageStatus{CurrentRollout: "prod-v3"})
	describe(&fleetv1alpha1.FleetStageStatus{LastRollout: "prod-v3"})
	require.EqualValues(t, 3, writes.Load())
	// The last one, with none running, does.
	describe(&fleetv1alpha1.FleetStageStatus{LastRollout: "prod-v2"})
	require.EqualValues(t, 4, writes.Load())
}
